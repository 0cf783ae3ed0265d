/*
 * cmd_lint.c — pagetune lint: a PYTORCH_CUDA_ALLOC_CONF value checked
 * against what PyTorch 2.11 accepts and does with it, without PyTorch.
 *
 * The value is read by allocconf.c, the one reader of such values (sim
 * --conf reads it too): 2.11's rules, each key's own check.  Here, once all
 * are read: what one key does that depends on another (no-ops and
 * conflicts).  Findings are data (key, severity, message); the text and
 * JSON printers read the same list.
 */
#include "cli.h"
#include "allocconf.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"
#include "mech.h"

#define LINT_TORCH PT_CONF_TORCH
#define LINT_MAXENV 4

typedef struct lint_args {
  const char *torch_version, *gpu;
  const char *env[LINT_MAXENV];
  int nenv, from_env, json;
} lint_args;

static const lint_args defaults = {.torch_version = LINT_TORCH};
static const pt_cli_opt lint_opts[] = {
    PT_CLI_OPT_STR("torch-version", 0, "V", lint_args, torch_version,
                   "the PyTorch version to check against (default and only one known: " LINT_TORCH ")"),
    PT_CLI_OPT_LIST("env", "NAME=VALUE", lint_args, env, nenv,
                    "PYTORCH_CUDA_ALLOC_CONF=... or PYTORCH_ALLOC_CONF=..., as the workload's environment has them"),
    PT_CLI_OPT_FLAG("from-env", lint_args, from_env, "read both variables from this process's environment"),
    PT_CLI_OPT_STR("gpu", 0, "NAME", lint_args, gpu,
                   "a GPU description (h200, a100, a .gpu file): per_process_memory_fraction as bytes"),
    PT_CLI_OPT_FLAG("json", lint_args, json, "one JSON object: the findings as an array of {key, severity, message}"),
    PT_CLI_END};
const pt_cli_table pt_opts_lint = {
    "usage: pagetune lint [CONF] [--env NAME=VALUE]... [--from-env] [--torch-version V] [--gpu NAME] [--json]\n"
    "\n"
    "Check a PYTORCH_CUDA_ALLOC_CONF value (CONF) against PyTorch " LINT_TORCH ", the only\n"
    "version whose parser and behaviour this tool was built on (others are refused).\n"
    "One finding a line, 'SEVERITY: KEY: message':\n"
    "  error    PyTorch refuses it when CUDA initialises: an unknown key, a\n"
    "           bad or out-of-range value, a malformed entry\n"
    "  warning  accepted but does nothing, or conflicts: garbage_collection_threshold\n"
    "           with no cap, max_non_split_rounding_mb without max_split_size_mb,\n"
    "           native-allocator knobs under backend:cudaMallocAsync, a key given\n"
    "           twice, both variables set and different\n"
    "  note     worth knowing: per_process_memory_fraction is the cap (in bytes with\n"
    "           --gpu); roundup_power2_divisions' list form interval by interval, as\n"
    "           the code reads it; expandable segments and memory shared across processes\n"
    "With --env or --from-env both PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF\n"
    "are considered; " LINT_TORCH " reads PYTORCH_CUDA_ALLOC_CONF when both are set\n"
    "(measured on the H200), else PYTORCH_ALLOC_CONF, and that one is checked.\n"
    "Exit 0 when no error (warnings and notes allowed), 1 when an error, 2 bad usage.\n",
    lint_opts, sizeof(lint_args), &defaults, 1};

#define SEEN(s, name) (pt_conf_value((s), (name)) != NULL) /* given, and accepted */

/* 2^i MiB as text: "256 MiB", "2 GiB". */
static const char *mib_text(int i, char *buf, size_t n) {
  if (i < 10) snprintf(buf, n, "%u MiB", 1u << i);
  else snprintf(buf, n, "%u GiB", 1u << (i - 10));
  return buf;
}

/*
 * The list form as 2.11 reads it, interval by interval: its documentation
 * puts each boundary one octave lower than the code does (entry B covers
 * [B, 2B) MiB), so the reading is worth saying.
 */
static void note_roundup_list(pt_conf *s, const char *v) {
  double num;
  pt_plist l;
  char why[200], msg[256], lo[16], hi[16];
  if (v[0] != '[' || pt_param_value_parse(v, &num, &l, why, sizeof why) < 0) return;
  size_t at = (size_t)snprintf(msg, sizeof msg, "as PyTorch %s reads it:", LINT_TORCH);
  for (int i = 0; i < PT_PARAM_LIST_MAX && at < sizeof msg;) {
    int j = i;
    double d = l.n ? l.v[i] : num;
    while (j + 1 < PT_PARAM_LIST_MAX && (l.n ? l.v[j + 1] : num) == d) j++;
    char what[32];
    if (d > 1) snprintf(what, sizeof what, "%.0f divisions", d);
    else snprintf(what, sizeof what, "512-byte rounding");
    if (i == 0 && j == PT_PARAM_LIST_MAX - 1) at += (size_t)snprintf(msg + at, sizeof msg - at, " every size %s", what);
    else if (i == 0) at += (size_t)snprintf(msg + at, sizeof msg - at, " below %s %s", mib_text(j + 1, hi, sizeof hi), what);
    else if (j == PT_PARAM_LIST_MAX - 1) at += (size_t)snprintf(msg + at, sizeof msg - at, "; from %s %s", mib_text(i, lo, sizeof lo), what);
    else at += (size_t)snprintf(msg + at, sizeof msg - at, "; [%s, %s) %s", mib_text(i, lo, sizeof lo), mib_text(j + 1, hi, sizeof hi), what);
    i = j + 1;
  }
  pt_conf_add(s, "roundup_power2_divisions", PT_CONF_NOTE, "%s (each boundary B covers [B, 2B) MiB: the documentation puts it an octave lower)", msg);
}

/* What one key does depending on another: lint's findings beside the reader's. */
static void lint_conf(pt_conf *s, const char *conf, const char *var, const pt_gpu *gpu) {
  pt_conf_read(s, conf, var);
  /* What one key does depending on another. */
  if (SEEN(s, "roundup_power2_divisions") && !s->async) note_roundup_list(s, pt_conf_value(s, "roundup_power2_divisions"));
  if (SEEN(s, "garbage_collection_threshold") && !s->has_fraction && !s->async)
    pt_conf_add(s, "garbage_collection_threshold", PT_CONF_WARNING,
        "acts only under a cap: without per_process_memory_fraction here it does nothing unless the program "
        "calls torch.cuda.set_per_process_memory_fraction");
  if (SEEN(s, "max_non_split_rounding_mb") && !SEEN(s, "max_split_size_mb") && !s->async)
    pt_conf_add(s, "max_non_split_rounding_mb", PT_CONF_WARNING,
        "does nothing without max_split_size_mb: it rounds only requests for blocks above that size");
  if (s->async) {
    for (int k = 0; k < pt_conf_nkeys(); k++)
      if (pt_conf_key_native(k) && (s->ok >> k & 1u))
        pt_conf_add(s, pt_conf_key_name(k), PT_CONF_WARNING, "a native-allocator knob: backend:cudaMallocAsync ignores it");
    if (s->expandable)
      pt_conf_add(s, "expandable_segments", PT_CONF_WARNING,
          "conflicts with backend:cudaMallocAsync: expandable segments are the native allocator's, so it is ignored");
  }
  if (s->expandable && !s->async)
    pt_conf_add(s, "expandable_segments", PT_CONF_NOTE,
        "segments are mapped through the CUDA VMM API: memory shared with another process (CUDA IPC), "
        "registered as NCCL user buffers, or captured in CUDA graphs is where PyTorch documents limits");
  if (s->has_fraction) {
    if (gpu)
      pt_conf_add(s, "per_process_memory_fraction", PT_CONF_NOTE, "the allocator's cap: %.17g x %llu = %llu bytes on %s%s",
          s->fraction, (unsigned long long)gpu->memory_bytes,
          (unsigned long long)(s->fraction * (double)gpu->memory_bytes), gpu->name,
          SEEN(s, "garbage_collection_threshold") ? "; garbage_collection_threshold is a fraction of it" : "");
    else
      pt_conf_add(s, "per_process_memory_fraction", PT_CONF_NOTE,
          "the allocator's cap, int(fraction x device memory) bytes, as torch.cuda.set_per_process_memory_fraction "
          "sets it%s",
          SEEN(s, "garbage_collection_threshold") ? "; garbage_collection_threshold is a fraction of it" : "");
  }
}

static void print_text(const pt_conf *s) {
  pt_conf_findings_text(stdout, "", s);
  if (!s->n) printf("ok: no findings (PyTorch %s)\n", LINT_TORCH);
}

static void print_json(const pt_conf *s, const char *var, const char *conf, int errors, int warnings) {
  printf("{\"torch_version\":\"%s\",\"variable\":", LINT_TORCH);
  pt_json_str(stdout, var);
  fputs(",\"value\":", stdout);
  pt_json_str(stdout, conf);
  printf(",\"errors\":%d,\"warnings\":%d,\"findings\":", errors, warnings);
  pt_conf_findings_json(stdout, s);
  printf(",\"findings_not_shown\":%d}\n", s->dropped);
}

int pt_cmd_lint(void *args, char **pos, int npos, pt_err *err) {
  const lint_args *a = args;
  const char *v = a->torch_version;
  if (strcmp(v, LINT_TORCH) && (strncmp(v, LINT_TORCH ".", 5) || !v[5] || strspn(v + 5, "0123456789") != strlen(v + 5)))
    return pt_cli_usage(err, "--torch-version '%.40s': only PyTorch %s is known (the one measured here)", v, LINT_TORCH);
  const char *cuda = npos ? pos[0] : NULL, *plain = NULL;
  for (int i = 0; i < a->nenv; i++) {
    const char *e = a->env[i];
    if (!strncmp(e, "PYTORCH_CUDA_ALLOC_CONF=", 24)) {
      if (cuda) return pt_cli_usage(err, "PYTORCH_CUDA_ALLOC_CONF given twice (CONF and --env)");
      cuda = e + 24;
    } else if (!strncmp(e, "PYTORCH_ALLOC_CONF=", 19)) {
      if (plain) return pt_cli_usage(err, "PYTORCH_ALLOC_CONF given twice");
      plain = e + 19;
    } else
      return pt_cli_usage(err, "--env '%.60s': PYTORCH_CUDA_ALLOC_CONF=VALUE or PYTORCH_ALLOC_CONF=VALUE", e);
  }
  if (a->from_env) {
    if (!cuda) cuda = getenv("PYTORCH_CUDA_ALLOC_CONF");
    if (!plain) plain = getenv("PYTORCH_ALLOC_CONF");
  }
  if (!cuda && !plain)
    return pt_cli_usage(err, a->from_env ? "neither PYTORCH_CUDA_ALLOC_CONF nor PYTORCH_ALLOC_CONF is set"
                                         : "no configuration to check (CONF, --env or --from-env)");
  pt_gpu g, *gpu = NULL;
  if (a->gpu && strcmp(a->gpu, "none")) {
    int rc = pt_gpu_load(a->gpu, err, &g);
    if (rc < 0) return rc;
    gpu = &g;
  }
  pt_conf *s = calloc(1, sizeof *s);
  if (!s) return pt_err_set(err, PT_ENOMEM, "out of memory");
  const char *var = cuda ? "PYTORCH_CUDA_ALLOC_CONF" : "PYTORCH_ALLOC_CONF", *conf = cuda ? cuda : plain;
  if (cuda && plain && strcmp(cuda, plain))
    pt_conf_add(s, "PYTORCH_ALLOC_CONF", PT_CONF_WARNING,
        "set and different from PYTORCH_CUDA_ALLOC_CONF: PyTorch %s uses PYTORCH_CUDA_ALLOC_CONF (measured), "
        "so PYTORCH_ALLOC_CONF is ignored", LINT_TORCH);
  lint_conf(s, conf, var, gpu);
  int errors = s->errors, warnings = s->warnings;
  if (a->json) print_json(s, var, conf, errors, warnings);
  else print_text(s);
  free(s);
  if (errors)
    return pt_err_set(err, PT_EFORMAT, "%s: %d error%s: PyTorch %s would refuse it", var, errors,
                      errors > 1 ? "s" : "", LINT_TORCH);
  return 0;
}
