/*
 * cmd_export.c — pagetune export: a stored run's configuration for a
 * PyTorch image (PYTORCH_CUDA_ALLOC_CONF, Dockerfile lines, JSON); with
 * --context, the files the Dockerfile's COPY lines name, found beside the
 * running program's build tree or where pagetune was installed.
 */
#include <config.h>

#include "cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "workbench.h"

static int opt_format(const char *arg, void *field) {
  if (strcmp(arg, "env") && strcmp(arg, "dockerfile") && strcmp(arg, "json")) return -1;
  *(const char **)field = arg;
  return 0;
}

static const pt_cli_opt export_opts[] = {
    PT_WB_OPT_DB,
    PT_WB_OPT_TRACE("the trace: a file, a stored name or a prefix of its content hash (one)"),
    PT_CLI_OPT_ULONG("run", "ID", pt_wb_args, run, 1, LONG_MAX, NULL, "this stored run (default: the best by --objective)"),
    PT_WB_OPT_OBJECTIVE("time (default), memory, or weighted:W, as for best;"),
    PT_WB_OPT_GPU("the GPU whose memory the fraction is of (default: the run's GPU;\n"
                  "'none': computed on the machine)"),
    PT_CLI_OPT_PARSE("format", "F", pt_wb_args, format, opt_format, " (env, dockerfile or json)",
                     "env (shell export lines), dockerfile (ENV lines), json"),
    PT_CLI_OPT_STR("merge", 0, "VALUE", pt_wb_args, merge, "an existing PYTORCH_CUDA_ALLOC_CONF value to merge into"),
    PT_CLI_OPT_STR("context", 0, "DIR", pt_wb_args, context,
                   "with --format dockerfile: write into DIR/pagetune/ the files the\n"
                   "COPY lines name (the library, its Python files, the JSON config)"),
    PT_CLI_END};
const pt_cli_table pt_opts_export = {
    "usage: pagetune export [--db DB] --trace T [--run ID] [--objective O] [--gpu NAME]\n"
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

static int export_run(const pt_wb_args *a, pt_store *db, const pt_store_run *r, pt_err *err) {
  pt_wb_export *x = malloc(sizeof *x);
  if (!x) return pt_err_set(err, PT_ENOMEM, "export: out of memory");
  int rc = pt_wb_export_of_run(db, r, a->gpu, x, err);
  if (rc < 0 || !a->context) {
    if (rc == 0) rc = pt_export_write(stdout, &x->in, a->format, a->merge, err);
    free(x);
    return rc;
  }
  pt_wb_lib_files *lf = malloc(sizeof *lf);
  if (!lf) {
    free(x);
    return pt_err_set(err, PT_ENOMEM, "export: out of memory");
  }
  pt_export_context ctx = {a->context, NULL, NULL, NULL};
  pt_wb_find_lib_files(lf, &ctx);
  rc = pt_export_write_context(stdout, &x->in, a->merge, &ctx, err);
  if (rc == PT_ENOTFOUND) {
    char why[PT_ERRMSG_MAX];
    snprintf(why, sizeof why, "%s", err->msg);
    pt_err_set(err, rc, "%.300s; looked for %s", why, pt_wb_lib_looked(&ctx));
  }
  free(lf);
  free(x);
  return rc;
}

int pt_cmd_export(void *args, char **pos, int npos, pt_err *err) {
  const pt_wb_args *a = args;
  if (a->ntraces != 1) return pt_cli_usage(err, "needs exactly one --trace");
  if (!a->format) return pt_cli_usage(err, "needs --format env|dockerfile|json");
  if (a->context && strcmp(a->format, "dockerfile")) return pt_cli_usage(err, "--context goes with --format dockerfile");
  if (a->run && a->objective_given) return pt_cli_usage(err, "--run names the run; --objective chooses one: give one of them");
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
    rc = pt_wb_no_run(a->db, a->traces[0], &a->objective, rows, n, err);
  }
  if (rc == 0) rc = export_run(a, db, &rows[b], err);
  pt_store_close(db);
  free(rows);
  return rc == PT_EUSAGE ? PT_EFORMAT : rc; /* what went wrong past the options is bad input (exit 1), not usage */
}
