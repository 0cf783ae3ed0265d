/*
 * cmd_export.c — pagetune export: a stored run's configuration for a
 * PyTorch image (PYTORCH_CUDA_ALLOC_CONF, Dockerfile lines, JSON); with
 * --context, the files the Dockerfile's COPY lines name, found beside the
 * running program's build tree or where pagetune was installed.
 */
#include <config.h>

#include "cli.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "hooktab.h"
#include "workbench.h"

static int opt_format(const char *arg, void *field) {
  if (strcmp(arg, "env") && strcmp(arg, "dockerfile") && strcmp(arg, "json")) return -1;
  *(const char **)field = arg;
  return 0;
}

static const pt_cli_opt export_opts[] = {
    PT_WB_OPT_DB,
    PT_WB_OPT_TRACE("the trace: a name or a prefix of its content hash (one)"),
    PT_CLI_OPT_ULONG("run", "ID", pt_wb_args, run, 1, LONG_MAX, NULL, "this stored run (default: the best by --objective)"),
    PT_WB_OPT_OBJECTIVE("time (default), memory, or weighted:W, as for best"),
    PT_CLI_OPT_PARSE("format", "F", pt_wb_args, format, opt_format, " (env, dockerfile or json)",
                     "env (shell export lines), dockerfile (ENV lines), json"),
    PT_CLI_OPT_STR("merge", 0, "VALUE", pt_wb_args, merge, "an existing PYTORCH_CUDA_ALLOC_CONF value to merge into"),
    PT_CLI_OPT_STR("context", 0, "DIR", pt_wb_args, context,
                   "with --format dockerfile: write into DIR/pagetune/ the files the\n"
                   "COPY lines name (the library, its Python files, the JSON config)"),
    PT_CLI_END};
const pt_cli_table pt_opts_export = {
    "usage: pagetune export [--db DB] --trace T [--run ID] [--objective O]\n"
    "                       --format env|dockerfile|json [--merge \"EXISTING\"] [--context DIR]\n"
    "\n"
    "The configuration of a stored run (--run, or the best run of TRACE by the\n"
    "objective) for a PyTorch image: what PyTorch can express as a\n"
    "PYTORCH_CUDA_ALLOC_CONF value with only keys PyTorch accepts, set as both\n"
    "PYTORCH_ALLOC_CONF (read first by current PyTorch) and PYTORCH_CUDA_ALLOC_CONF\n"
    "(older PyTorch, vLLM); what it cannot, as pagetune's allocator library\n"
    "configuration and, for a Dockerfile, the lines that install it in the\n"
    "image.  Approximations and knobs that would do nothing are said.\n",
    export_opts, sizeof(pt_wb_args), &pt_wb_defaults, 0};

/* What the run's policy's hooks become for the library. */
typedef struct hook_export {
  int has_hooks, resolved, page_size_dropped;
  pt_sizetab_set tables;
  char refused[PT_ERRMSG_MAX];
} hook_export;

/*
 * The run's policy, as the store keeps its text (the policy file may have changed since), with the run's
 * parameters set: whether it has hooks, and its size hooks resolved into tables (hooktab.h), or why not.
 * A policy whose text cannot be read or loaded is taken to have no hooks, as before tables.
 */
static int resolve_hooks(pt_store *db, const pt_store_run *r, const pt_params *params, hook_export *h, pt_err *err) {
  memset(h, 0, sizeof *h);
  char *text;
  size_t len;
  int rc = pt_store_policy_text(db, r->policy_id, err, &text, &len);
  if (rc < 0) return rc;
  pt_policy *pol;
  pt_err perr;
  rc = pt_policy_load_buffer(text, len, r->policy, NULL, &perr, &pol);
  free(text);
  if (rc < 0) return 0;
  pt_policy_hooks hk;
  pt_policy_get_hooks(pol, &hk);
  h->has_hooks = hk.round || hk.segment_size || hk.page_size || hk.should_collect;
  for (int i = 0; rc == 0 && h->has_hooks && i < params->n; i++) /* the run's values of the policy's own parameters */
    for (int k = 0; k < pt_policy_nparams(pol); k++)
      if (!strcmp(pt_policy_param_at(pol, k)->name, params->v[i].name)) {
        char as[PT_PARAM_NAME_MAX + 40];
        snprintf(as, sizeof as, "%s=%.17g", params->v[i].name, params->v[i].value);
        if ((rc = pt_policy_set(pol, as, err)) < 0) rc = pt_err_prefix(err, rc, "%s: run %" PRId64, "export", r->id);
      }
  if (rc == 0 && h->has_hooks) {
    if (pt_hooktab_resolve_policy(pol, &h->tables, &h->page_size_dropped, &perr) == 0) h->resolved = 1;
    else snprintf(h->refused, sizeof h->refused, "%s", perr.msg);
  }
  pt_policy_free(pol);
  return rc;
}

/* The directory the running program lies in ("" when unknown), into buf. */
static const char *program_dir(char *buf, size_t n) {
  ssize_t len = readlink("/proc/self/exe", buf, n - 1);
  buf[len > 0 ? len : 0] = 0;
  char *slash = strrchr(buf, '/');
  if (slash) *slash = 0;
  else buf[0] = 0;
  return buf;
}

static const char *existing(char *buf, size_t n, const char *dir, const char *name) {
  if (!dir || !*dir || snprintf(buf, n, "%s/%s", dir, name) >= (int)n) return NULL;
  return access(buf, R_OK) == 0 ? buf : NULL;
}

/*
 * The library and its Python files, as the package lays them out: the library named by
 * PAGETUNE_ALLOC_LIB (as pagetune_alloc.py reads it), else the running program's build
 * tree (backend/.libs/), else pkglibdir; the Python files beside the library, else in the
 * build tree's sources.  NULL for each not found.
 */
typedef struct lib_files {
  char lib[4096], alloc_py[4096], site_py[4096];
} lib_files;

static void find_lib_files(lib_files *lf, pt_export_context *ctx) {
  char exe[4096], build[4096 + 16], libdir[4096];
  program_dir(exe, sizeof exe);
  snprintf(build, sizeof build, "%s/backend/.libs", exe);
  const char *env = getenv("PAGETUNE_ALLOC_LIB");
  int in_build = 0;
  if (env && *env) ctx->lib = access(env, R_OK) == 0 ? snprintf(lf->lib, sizeof lf->lib, "%s", env), lf->lib : NULL;
  else if ((ctx->lib = existing(lf->lib, sizeof lf->lib, build, "libpagetune_alloc.so"))) in_build = 1;
  else ctx->lib = existing(lf->lib, sizeof lf->lib, PT_PKGLIBDIR, "libpagetune_alloc.so");
  snprintf(libdir, sizeof libdir, "%s", ctx->lib ? ctx->lib : "");
  char *slash = strrchr(libdir, '/');
  if (slash) *slash = 0;
  char src[4096 + 16], abs_src[] = PT_ABS_SRCDIR "/backend/python";
  snprintf(src, sizeof src, "%s/backend/python", exe);
  const char *dirs[] = {in_build ? NULL : libdir, in_build ? src : NULL, in_build ? abs_src : NULL};
  ctx->alloc_py = ctx->site_py = NULL;
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !(ctx->alloc_py && ctx->site_py); i++) {
    ctx->alloc_py = existing(lf->alloc_py, sizeof lf->alloc_py, dirs[i], "pagetune_alloc.py");
    ctx->site_py = existing(lf->site_py, sizeof lf->site_py, dirs[i], "pagetune_sitecustomize.py");
  }
  if (!(ctx->alloc_py && ctx->site_py)) ctx->alloc_py = ctx->site_py = NULL; /* both from one place, or neither */
}

static int export_run(const pt_wb_args *a, pt_store *db, const pt_store_run *r, pt_err *err) {
  pt_params params;
  if (pt_params_from_json(r->params_json, &params) < 0)
    return pt_err_set(err, PT_EFORMAT, "%s: run %" PRId64 ": unreadable parameters %s", a->db, r->id, r->params_json);
  pt_gpu gpu;
  pt_err gerr;
  uint64_t total = pt_gpu_load(r->gpu[0] ? r->gpu : "h200", &gerr, &gpu) == 0 ? gpu.memory_bytes : 0;
  hook_export *h = malloc(sizeof *h);
  if (!h) return pt_err_set(err, PT_ENOMEM, "export: out of memory");
  int rc = resolve_hooks(db, r, &params, h, err);
  if (rc < 0) {
    free(h);
    return rc;
  }
  pt_export_input in = {r->policy, r->mechanism, &params, r->capacity, total, h->has_hooks, r->trace, r->id,
                        h->resolved ? &h->tables : NULL, h->refused, h->page_size_dropped};
  if (!a->context) {
    rc = pt_export_write(stdout, &in, a->format, a->merge, err);
    free(h);
    return rc;
  }
  lib_files *lf = malloc(sizeof *lf);
  if (!lf) {
    free(h);
    return pt_err_set(err, PT_ENOMEM, "export: out of memory");
  }
  pt_export_context ctx = {a->context, NULL, NULL, NULL};
  find_lib_files(lf, &ctx);
  rc = pt_export_write_context(stdout, &in, a->merge, &ctx, err);
  if (rc == PT_ENOTFOUND) {
    char why[PT_ERRMSG_MAX];
    snprintf(why, sizeof why, "%s", err->msg);
    pt_err_set(err, rc, "%.300s; looked for %s", why,
               ctx.lib ? "beside the library" : "PAGETUNE_ALLOC_LIB, the build tree's backend/.libs/, " PT_PKGLIBDIR " (a build without CUDA has none)");
  }
  free(lf);
  free(h);
  return rc;
}

int pt_cmd_export(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  if (a->ntraces != 1) return pt_cli_usage(err, "needs exactly one --trace");
  if (!a->format) return pt_cli_usage(err, "needs --format env|dockerfile|json");
  if (a->context && strcmp(a->format, "dockerfile")) return pt_cli_usage(err, "--context goes with --format dockerfile");
  pt_store *db;
  int rc = pt_store_open(a->db, PT_STORE_READONLY, err, &db);
  if (rc < 0) return rc;
  pt_store_run *rows;
  size_t n;
  long b = -1;
  rc = pt_wb_best(db, a->traces[0], &a->objective, err, &rows, &n, &b);
  if (rc < 0) {
    pt_store_close(db);
    return rc;
  }
  if (a->run) {
    b = -1;
    for (size_t i = 0; i < n; i++)
      if (rows[i].id == (int64_t)a->run) b = (long)i;
    if (b < 0) rc = pt_err_set(err, PT_ENOTFOUND, "%s: no run %lu of trace '%s'", a->db, a->run, a->traces[0]);
  } else if (b < 0) {
    rc = pt_err_set(err, PT_ENOTFOUND, "%s: no run of trace '%s' to export", a->db, a->traces[0]);
  }
  if (rc == 0) rc = export_run(a, db, &rows[b], err);
  pt_store_close(db);
  free(rows);
  return rc;
}
