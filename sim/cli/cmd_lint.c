/*
 * cmd_lint.c — pagetune lint: a PYTORCH_CUDA_ALLOC_CONF value checked
 * against what PyTorch 2.11 accepts and does with it, without PyTorch.
 *
 * The rules are those of 2.11's allocator-config parser (c10's
 * AllocatorConfig / CUDAAllocatorConfig): the string is split into entries
 * at top-level commas, spaces dropped, each entry KEY:VALUE.  Each key has
 * one checker (the table below); what one key does that depends on another
 * (no-ops and conflicts) is checked once all are read.  Findings are data
 * (key, severity, message); the text and JSON printers read the same list.
 */
#include "cli.h"
#include "json.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

#define LINT_TORCH "2.11"     /* the one version measured here */
#define LINT_MAXFIND 64       /* findings kept; past it, one more says so */
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
    "           --gpu); expandable segments and memory shared across processes\n"
    "With --env or --from-env both PYTORCH_CUDA_ALLOC_CONF and PYTORCH_ALLOC_CONF\n"
    "are considered; " LINT_TORCH " reads PYTORCH_CUDA_ALLOC_CONF when both are set\n"
    "(measured on the H200), else PYTORCH_ALLOC_CONF, and that one is checked.\n"
    "Exit 0 when no error (warnings and notes allowed), 1 when an error, 2 bad usage.\n",
    lint_opts, sizeof(lint_args), &defaults, 1};

typedef enum { SEV_ERROR, SEV_WARNING, SEV_NOTE } lint_sev;
static const char *const sev_names[] = {"error", "warning", "note"};

typedef struct lint_finding {
  char key[48];
  lint_sev sev;
  char msg[256];
} lint_finding;

/* What one check saw: its findings, and what the cross-key rules need. */
typedef struct lint_state {
  lint_finding f[LINT_MAXFIND + 1];
  int n, dropped;
  int errors, warnings; /* counted over all findings, kept or dropped */
  unsigned seen, ok;   /* bit per key table index: given; given with a value PyTorch accepts */
  int async;           /* backend:cudaMallocAsync */
  int expandable;      /* expandable_segments:True */
  int has_fraction;    /* per_process_memory_fraction given and accepted */
  double fraction;
} lint_state;

static void add(lint_state *s, const char *key, lint_sev sev, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(lint_state *s, const char *key, lint_sev sev, const char *fmt, ...) {
  s->errors += sev == SEV_ERROR, s->warnings += sev == SEV_WARNING;
  if (s->n == LINT_MAXFIND) {
    s->dropped++;
    return;
  }
  lint_finding *f = &s->f[s->n++];
  snprintf(f->key, sizeof f->key, "%s", key);
  f->sev = sev;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->msg, sizeof f->msg, fmt, ap);
  va_end(ap);
}

/* ---- values ---------------------------------------------------------------- */

/* A plain decimal integer (no sign, no suffix); 0 when it is one. */
static int parse_uint(const char *v, uint64_t *out) {
  if (!*v || strspn(v, "0123456789") != strlen(v) || strlen(v) > 18) return -1;
  *out = strtoull(v, NULL, 10);
  return 0;
}

static int parse_double(const char *v, double *out) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (!*v || *end || errno || !isfinite(d)) return -1;
  *out = d;
  return 0;
}

static int is_pow2(uint64_t x) { return x && !(x & (x - 1)); }

/* One key's checker: the value (spaces dropped); findings into s. */
typedef void (*lint_check)(lint_state *s, const char *key, const char *v);

static void check_bool(lint_state *s, const char *key, const char *v) {
  if (strcmp(v, "True") && strcmp(v, "False")) add(s, key, SEV_ERROR, "'%s' is not True or False (capitalised)", v);
  else if (!strcmp(key, "expandable_segments")) s->expandable = !strcmp(v, "True");
}

static void check_backend(lint_state *s, const char *key, const char *v) {
  if (!strcmp(v, "cudaMallocAsync")) s->async = 1;
  else if (strcmp(v, "native")) add(s, key, SEV_ERROR, "unknown backend '%s' (native or cudaMallocAsync)", v);
}

/* max_split_size_mb, max_non_split_rounding_mb: whole MiB, at least the 20 MiB large-buffer size. */
static void check_mb20(lint_state *s, const char *key, const char *v) {
  uint64_t x;
  if (parse_uint(v, &x) < 0) add(s, key, SEV_ERROR, "'%s' is not a whole number of MiB", v);
  else if (x < 20) add(s, key, SEV_ERROR, "%s MiB is too small: PyTorch requires >= 20", v);
}

static void check_mb_positive(lint_state *s, const char *key, const char *v) {
  uint64_t x;
  if (parse_uint(v, &x) < 0) add(s, key, SEV_ERROR, "'%s' is not a whole number of MiB", v);
  else if (x == 0) add(s, key, SEV_ERROR, "must be greater than 0");
}

static void check_gc(lint_state *s, const char *key, const char *v) {
  double d;
  if (parse_double(v, &d) < 0) add(s, key, SEV_ERROR, "'%s' is not a number", v);
  else if (!(d > 0 && d < 1)) add(s, key, SEV_ERROR, "%s is out of range: PyTorch requires 0 < x < 1", v);
}

static void check_fraction(lint_state *s, const char *key, const char *v) {
  double d;
  if (parse_double(v, &d) < 0) add(s, key, SEV_ERROR, "'%s' is not a number", v);
  else if (!(d >= 0 && d <= 1)) add(s, key, SEV_ERROR, "%s is out of range: PyTorch requires 0 <= x <= 1", v);
  else s->fraction = d, s->has_fraction = 1;
}

static void check_threads(lint_state *s, const char *key, const char *v) {
  uint64_t x;
  if (parse_uint(v, &x) < 0) add(s, key, SEV_ERROR, "'%s' is not a whole number", v);
  else if (!is_pow2(x) || x > 128) add(s, key, SEV_ERROR, "%s: PyTorch requires a power of two, at most 128", v);
}

/* An int power of two, or [SIZE_MB:DIV,...,>:DIV] with SIZE_MB a power of two and DIV a power of two or 0. */
static void check_roundup(lint_state *s, const char *key, const char *v) {
  uint64_t x;
  size_t len = strlen(v);
  if (v[0] != '[') {
    if (parse_uint(v, &x) < 0 || !is_pow2(x))
      add(s, key, SEV_ERROR, "'%s' is not a power of two (or a list [64:8,256:4,>:1])", v);
    return;
  }
  if (len < 2 || v[len - 1] != ']' || memchr(v + 1, '[', len - 1) || memchr(v, ']', len - 1)) {
    add(s, key, SEV_ERROR, "'%s': a list is [SIZE_MB:DIVISIONS,...,>:DIVISIONS]", v);
    return;
  }
  char item[64];
  for (const char *p = v + 1; p < v + len - 1;) {
    size_t n = strcspn(p, ",]");
    snprintf(item, sizeof item, "%.*s", (int)(n < 63 ? n : 63), p);
    char *colon = strchr(item, ':');
    uint64_t size, div;
    if (!colon) {
      add(s, key, SEV_ERROR, "list item '%s' is not SIZE_MB:DIVISIONS", item);
      return;
    }
    *colon = 0;
    if (strcmp(item, ">") && (parse_uint(item, &size) < 0 || !is_pow2(size))) {
      add(s, key, SEV_ERROR, "list size '%s' is not a power of two (MiB) or '>'", item);
      return;
    }
    if (parse_uint(colon + 1, &div) < 0 || (div && !is_pow2(div))) {
      add(s, key, SEV_ERROR, "divisions '%s' for %s is not a power of two or 0", colon + 1, item);
      return;
    }
    p += n + (p[n] == ',');
  }
}

/* The keys 2.11 accepts; native: a knob of the native caching allocator, which cudaMallocAsync ignores. */
static const struct lint_key {
  const char *name;
  lint_check check;
  int native;
} keys[] = {
    {"backend", check_backend, 0},
    {"max_split_size_mb", check_mb20, 1},
    {"max_non_split_rounding_mb", check_mb20, 1},
    {"garbage_collection_threshold", check_gc, 1},
    {"roundup_power2_divisions", check_roundup, 1},
    {"expandable_segments", check_bool, 0}, /* its conflict with cudaMallocAsync is said on its own */
    {"release_lock_on_cudamalloc", check_bool, 1},
    {"pinned_use_cuda_host_register", check_bool, 0},
    {"pinned_num_register_threads", check_threads, 0},
    {"large_segment_size_mb", check_mb_positive, 1},
    {"per_process_memory_fraction", check_fraction, 0},
    {"pinned_use_background_threads", check_bool, 0},
    {"pinned_reserve_segment_size_mb", check_mb_positive, 0},
    {"graph_capture_record_stream_reuse", check_bool, 1},
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))

static int key_index(const char *name) {
  for (int i = 0; i < NKEYS; i++)
    if (!strcmp(keys[i].name, name)) return i;
  return -1;
}
#define SEEN(s, name) ((s)->ok >> key_index(name) & 1u) /* given, and accepted */

/* ---- the whole string ------------------------------------------------------ */

static void lint_conf(lint_state *s, const char *conf, const char *var, const pt_gpu *gpu) {
  size_t len = strlen(conf);
  char *buf = malloc(len + 1), *e = buf;
  if (!buf) {
    add(s, var, SEV_ERROR, "out of memory");
    return;
  }
  for (const char *p = conf; *p; p++) /* PyTorch drops every space */
    if (*p != ' ') *e++ = *p;
  *e = 0;
  for (char *p = buf; *p;) {
    size_t n = 0;
    int depth = 0;
    while (p[n] && (depth || p[n] != ',')) depth += (p[n] == '[') - (p[n] == ']'), n++;
    int last = !p[n];
    p[n] = 0;
    char *colon = strchr(p, ':');
    if (!*p) {
      if (!last) add(s, var, SEV_ERROR, "an empty entry (two commas, or one at the start)");
    } else if (!colon || colon == p) {
      add(s, p, SEV_ERROR, "'%s' is not KEY:VALUE", p);
    } else {
      *colon = 0;
      int k = key_index(p);
      if (k < 0) add(s, p, SEV_ERROR, "unknown key: PyTorch %s refuses it", LINT_TORCH);
      else if (!colon[1]) add(s, p, SEV_ERROR, "no value");
      else {
        if (s->seen >> k & 1u) add(s, p, SEV_WARNING, "given twice: the last one wins");
        s->seen |= 1u << k;
        int before = s->n;
        keys[k].check(s, p, colon + 1);
        if (s->n == before) s->ok |= 1u << k;
      }
    }
    if (last) break;
    p += n + 1;
  }
  free(buf);

  /* What one key does depending on another. */
  if (SEEN(s, "garbage_collection_threshold") && !s->has_fraction && !s->async)
    add(s, "garbage_collection_threshold", SEV_WARNING,
        "acts only under a cap: without per_process_memory_fraction here it does nothing unless the program "
        "calls torch.cuda.set_per_process_memory_fraction");
  if (SEEN(s, "max_non_split_rounding_mb") && !SEEN(s, "max_split_size_mb") && !s->async)
    add(s, "max_non_split_rounding_mb", SEV_WARNING,
        "does nothing without max_split_size_mb: it rounds only requests for blocks above that size");
  if (s->async) {
    for (int k = 0; k < NKEYS; k++)
      if (keys[k].native && (s->ok >> k & 1u))
        add(s, keys[k].name, SEV_WARNING, "a native-allocator knob: backend:cudaMallocAsync ignores it");
    if (s->expandable)
      add(s, "expandable_segments", SEV_WARNING,
          "conflicts with backend:cudaMallocAsync: expandable segments are the native allocator's, so it is ignored");
  }
  if (s->expandable && !s->async)
    add(s, "expandable_segments", SEV_NOTE,
        "segments are mapped through the CUDA VMM API: memory shared with another process (CUDA IPC), "
        "registered as NCCL user buffers, or captured in CUDA graphs is where PyTorch documents limits");
  if (s->has_fraction) {
    if (gpu)
      add(s, "per_process_memory_fraction", SEV_NOTE, "the allocator's cap: %.17g x %llu = %llu bytes on %s%s",
          s->fraction, (unsigned long long)gpu->memory_bytes,
          (unsigned long long)(s->fraction * (double)gpu->memory_bytes), gpu->name,
          SEEN(s, "garbage_collection_threshold") ? "; garbage_collection_threshold is a fraction of it" : "");
    else
      add(s, "per_process_memory_fraction", SEV_NOTE,
          "the allocator's cap, int(fraction x device memory) bytes, as torch.cuda.set_per_process_memory_fraction "
          "sets it%s",
          SEEN(s, "garbage_collection_threshold") ? "; garbage_collection_threshold is a fraction of it" : "");
  }
}

/* Text the user gave, on a terminal: control characters become '?', so a finding stays one line. */
static void put_safe(const char *t) {
  for (; *t; t++) putchar((unsigned char)*t < 0x20 || *t == 0x7f ? '?' : *t);
}

static void print_text(const lint_state *s) {
  for (int i = 0; i < s->n; i++) {
    printf("%s: ", sev_names[s->f[i].sev]);
    put_safe(s->f[i].key);
    fputs(": ", stdout);
    put_safe(s->f[i].msg);
    putchar('\n');
  }
  if (s->dropped) printf("note: -: %d more findings not shown\n", s->dropped);
  if (!s->n) printf("ok: no findings (PyTorch %s)\n", LINT_TORCH);
}

static void print_json(const lint_state *s, const char *var, const char *conf, int errors, int warnings) {
  printf("{\"torch_version\":\"%s\",\"variable\":", LINT_TORCH);
  pt_json_str(stdout, var);
  fputs(",\"value\":", stdout);
  pt_json_str(stdout, conf);
  printf(",\"errors\":%d,\"warnings\":%d,\"findings\":[", errors, warnings);
  for (int i = 0; i < s->n; i++) {
    fputs(i ? ",{\"key\":" : "{\"key\":", stdout);
    pt_json_str(stdout, s->f[i].key);
    printf(",\"severity\":\"%s\",\"message\":", sev_names[s->f[i].sev]);
    pt_json_str(stdout, s->f[i].msg);
    fputc('}', stdout);
  }
  printf("],\"findings_not_shown\":%d}\n", s->dropped);
}

int pt_cmd_lint(void *args, char **pos, int npos, pt_err *err) {
  const lint_args *a = args;
  const char *v = a->torch_version;
  if (strcmp(v, LINT_TORCH) && (strncmp(v, LINT_TORCH ".", 5) || !v[5] || strspn(v + 5, "0123456789") != strlen(v + 5)))
    return pt_err_set(err, PT_EUSAGE, "lint: --torch-version '%.40s': only PyTorch %s is known (the one measured here)", v,
                      LINT_TORCH);
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
  lint_state *s = calloc(1, sizeof *s);
  if (!s) return pt_err_set(err, PT_ENOMEM, "out of memory");
  const char *var = cuda ? "PYTORCH_CUDA_ALLOC_CONF" : "PYTORCH_ALLOC_CONF", *conf = cuda ? cuda : plain;
  if (cuda && plain && strcmp(cuda, plain))
    add(s, "PYTORCH_ALLOC_CONF", SEV_WARNING,
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
