/* allocconf.c — a PYTORCH_CUDA_ALLOC_CONF value read as PyTorch 2.11 reads it (see allocconf.h). */
#include "allocconf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json.h"
#include "mech.h"

const char *const pt_conf_sev_names[] = {"error", "warning", "note"};

void pt_conf_add(pt_conf *s, const char *key, pt_conf_sev sev, const char *fmt, ...) {
  s->errors += sev == PT_CONF_ERROR, s->warnings += sev == PT_CONF_WARNING;
  if (s->n == PT_CONF_MAXFIND) {
    s->dropped++;
    return;
  }
  pt_conf_finding *f = &s->f[s->n++];
  snprintf(f->key, sizeof f->key, "%s", key);
  f->sev = sev;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->msg, sizeof f->msg, fmt, ap);
  va_end(ap);
}

/* Text the user gave, on a terminal: control characters become '?', so a finding stays one line. */
static void put_safe(FILE *f, const char *t) {
  for (; *t; t++) fputc((unsigned char)*t < 0x20 || *t == 0x7f ? '?' : *t, f);
}

void pt_conf_findings_text(FILE *f, const char *prefix, const pt_conf *c) {
  for (int i = 0; i < c->n; i++) {
    fprintf(f, "%s%s: ", prefix, pt_conf_sev_names[c->f[i].sev]);
    put_safe(f, c->f[i].key);
    fputs(": ", f);
    put_safe(f, c->f[i].msg);
    fputc('\n', f);
  }
  if (c->dropped) fprintf(f, "%snote: -: %d more findings not shown\n", prefix, c->dropped);
}

void pt_conf_findings_json(FILE *f, const pt_conf *c) {
  fputc('[', f);
  for (int i = 0; i < c->n; i++) {
    fputs(i ? ",{\"key\":" : "{\"key\":", f);
    pt_json_str(f, c->f[i].key);
    fprintf(f, ",\"severity\":\"%s\",\"message\":", pt_conf_sev_names[c->f[i].sev]);
    pt_json_str(f, c->f[i].msg);
    fputc('}', f);
  }
  fputc(']', f);
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
typedef void (*conf_check)(pt_conf *s, const char *key, const char *v);

static void check_bool(pt_conf *s, const char *key, const char *v) {
  if (strcmp(v, "True") && strcmp(v, "False")) pt_conf_add(s, key, PT_CONF_ERROR, "'%s' is not True or False (capitalised)", v);
  else if (!strcmp(key, "expandable_segments")) s->expandable = !strcmp(v, "True");
}

static void check_backend(pt_conf *s, const char *key, const char *v) {
  if (!strcmp(v, "cudaMallocAsync")) s->async = 1;
  else if (strcmp(v, "native")) pt_conf_add(s, key, PT_CONF_ERROR, "unknown backend '%s' (native or cudaMallocAsync)", v);
}

/* max_split_size_mb, max_non_split_rounding_mb: whole MiB, at least the 20 MiB large-buffer size. */
static void check_mb20(pt_conf *s, const char *key, const char *v) {
  uint64_t x;
  if (parse_uint(v, &x) < 0) pt_conf_add(s, key, PT_CONF_ERROR, "'%s' is not a whole number of MiB", v);
  else if (x < 20) pt_conf_add(s, key, PT_CONF_ERROR, "%s MiB is too small: PyTorch requires >= 20", v);
}

static void check_mb_positive(pt_conf *s, const char *key, const char *v) {
  uint64_t x;
  if (parse_uint(v, &x) < 0) pt_conf_add(s, key, PT_CONF_ERROR, "'%s' is not a whole number of MiB", v);
  else if (x == 0) pt_conf_add(s, key, PT_CONF_ERROR, "must be greater than 0");
}

static void check_gc(pt_conf *s, const char *key, const char *v) {
  double d;
  if (parse_double(v, &d) < 0) pt_conf_add(s, key, PT_CONF_ERROR, "'%s' is not a number", v);
  else if (!(d > 0 && d < 1)) pt_conf_add(s, key, PT_CONF_ERROR, "%s is out of range: PyTorch requires 0 < x < 1", v);
}

static void check_fraction(pt_conf *s, const char *key, const char *v) {
  double d;
  if (parse_double(v, &d) < 0) pt_conf_add(s, key, PT_CONF_ERROR, "'%s' is not a number", v);
  else if (!(d >= 0 && d <= 1)) pt_conf_add(s, key, PT_CONF_ERROR, "%s is out of range: PyTorch requires 0 <= x <= 1", v);
  else s->fraction = d, s->has_fraction = 1;
}

static void check_threads(pt_conf *s, const char *key, const char *v) {
  uint64_t x;
  if (parse_uint(v, &x) < 0) pt_conf_add(s, key, PT_CONF_ERROR, "'%s' is not a whole number", v);
  else if (!is_pow2(x) || x > 128) pt_conf_add(s, key, PT_CONF_ERROR, "%s: PyTorch requires a power of two, at most 128", v);
}

/* An int power of two, or the list form: pt_param_value_parse, the one reader of list values. */
static void check_roundup(pt_conf *s, const char *key, const char *v) {
  uint64_t x;
  if (v[0] != '[') {
    if (parse_uint(v, &x) < 0 || !is_pow2(x))
      pt_conf_add(s, key, PT_CONF_ERROR, "'%s' is not a power of two (or a list [64:8,256:4,>:1])", v);
    return;
  }
  double num;
  pt_plist l;
  char why[200];
  if (pt_param_value_parse(v, &num, &l, why, sizeof why) < 0) pt_conf_add(s, key, PT_CONF_ERROR, "%s", why);
}

/* The keys 2.11 accepts; native: a knob of the native caching allocator, which cudaMallocAsync ignores. */
static const struct conf_key {
  const char *name;
  conf_check check;
  int native;
} keys[] = {
    [PT_CK_BACKEND] = {"backend", check_backend, 0},
    [PT_CK_MAX_SPLIT] = {"max_split_size_mb", check_mb20, 1},
    [PT_CK_NON_SPLIT] = {"max_non_split_rounding_mb", check_mb20, 1},
    [PT_CK_GC] = {"garbage_collection_threshold", check_gc, 1},
    [PT_CK_RP2] = {"roundup_power2_divisions", check_roundup, 1},
    [PT_CK_EXPANDABLE] = {"expandable_segments", check_bool, 0}, /* its conflict with cudaMallocAsync is said on its own */
    [PT_CK_RELEASE_LOCK] = {"release_lock_on_cudamalloc", check_bool, 1},
    [PT_CK_PINNED_REG] = {"pinned_use_cuda_host_register", check_bool, 0},
    [PT_CK_PINNED_THREADS] = {"pinned_num_register_threads", check_threads, 0},
    [PT_CK_LARGE_SEGMENT] = {"large_segment_size_mb", check_mb_positive, 1},
    [PT_CK_FRACTION] = {"per_process_memory_fraction", check_fraction, 0},
    [PT_CK_PINNED_BG] = {"pinned_use_background_threads", check_bool, 0},
    [PT_CK_PINNED_RESERVE] = {"pinned_reserve_segment_size_mb", check_mb_positive, 0},
    [PT_CK_GRAPH_REUSE] = {"graph_capture_record_stream_reuse", check_bool, 1},
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))
_Static_assert(NKEYS == PT_CK_N, "a name for every key index");
_Static_assert(NKEYS <= 16, "pt_conf keeps 16 values");

int pt_conf_key(const char *name) {
  for (int i = 0; i < NKEYS; i++)
    if (!strcmp(keys[i].name, name)) return i;
  return -1;
}

const char *pt_conf_key_name(int k) { return k >= 0 && k < NKEYS ? keys[k].name : NULL; }
int pt_conf_nkeys(void) { return NKEYS; }
int pt_conf_key_native(int k) { return k >= 0 && k < NKEYS && keys[k].native; }

const char *pt_conf_value(const pt_conf *c, const char *name) {
  int k = pt_conf_key(name);
  return k >= 0 && (c->ok >> k & 1u) ? c->value[k] : NULL;
}

/* ---- the whole string ------------------------------------------------------ */

void pt_conf_read(pt_conf *s, const char *conf, const char *var) {
  size_t len = strlen(conf);
  char *buf = malloc(len + 1), *e = buf;
  if (!buf) {
    pt_conf_add(s, var, PT_CONF_ERROR, "out of memory");
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
      if (!last) pt_conf_add(s, var, PT_CONF_ERROR, "an empty entry (two commas, or one at the start)");
    } else if (!colon || colon == p) {
      pt_conf_add(s, p, PT_CONF_ERROR, "'%s' is not KEY:VALUE", p);
    } else {
      *colon = 0;
      int k = pt_conf_key(p);
      if (k < 0) pt_conf_add(s, p, PT_CONF_ERROR, "unknown key: PyTorch %s refuses it", PT_CONF_TORCH);
      else if (!colon[1]) pt_conf_add(s, p, PT_CONF_ERROR, "no value");
      else {
        if (s->seen >> k & 1u) pt_conf_add(s, p, PT_CONF_WARNING, "given twice: the last one wins");
        s->seen |= 1u << k;
        int before = s->errors;
        keys[k].check(s, p, colon + 1);
        if (s->errors == before && strlen(colon + 1) >= sizeof s->value[k]) {
          s->toolong |= 1u << k; /* PyTorch may take it; pagetune keeps no such value */
          s->ok &= ~(1u << k);
          pt_conf_add(s, p, PT_CONF_WARNING, "a value of %zu bytes: pagetune reads at most %d", strlen(colon + 1),
                      PT_CONF_VALUE_MAX - 1);
        } else if (s->errors == before) {
          s->ok |= 1u << k;
          snprintf(s->value[k], sizeof s->value[k], "%s", colon + 1);
        } else {
          s->ok &= ~(1u << k);
        }
      }
    }
    if (last) break;
    p += n + 1;
  }
  free(buf);
}

/* ---- what the model makes of it ------------------------------------------------ */

/* The knobs the caching and expandable mechanisms take, under PyTorch's names. */
static const char *const model_knobs[] = {"max_split_size_mb", "max_non_split_rounding_mb", "garbage_collection_threshold",
                                          "roundup_power2_divisions"};

/* What a key the model does not model does, and whether the results may differ for it. */
static const struct {
  const char *key, *what;
  int matters;
} unmodelled[] = {
    {"release_lock_on_cudamalloc", "releases the allocator's lock around cudaMalloc: concurrency, not the memory the model counts", 0},
    {"pinned_use_cuda_host_register", "pinned host memory (cudaHostRegister), not device memory: nothing to model", 0},
    {"pinned_num_register_threads", "threads registering pinned host memory: nothing to model", 0},
    {"pinned_use_background_threads", "pinned host memory's background threads: nothing to model", 0},
    {"pinned_reserve_segment_size_mb", "a pinned host memory reserve: not device memory, nothing to model", 0},
    {"graph_capture_record_stream_reuse",
     "reuse of record_stream blocks freed during a CUDA graph capture: frees are replayed when the trace recorded "
     "them, which follows the setting a trace was captured with but cannot change it (graphs' private pools are "
     "modelled, from the trace's +pool lines)", 1},
};

int pt_conf_model_of(pt_conf *c, const char *what, pt_conf_model *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < c->n; i++)
    if (c->f[i].sev == PT_CONF_ERROR)
      return pt_err_set(err, PT_EFORMAT, "%s: %s: %s%s", what, c->f[i].key, c->f[i].msg,
                        c->errors > 1 ? " (one of several errors: 'pagetune lint' lists them)" : "");
  for (int k = 0; k < NKEYS; k++)
    if (c->toolong >> k & 1u)
      return pt_err_set(err, PT_EFORMAT, "%s: %s: a value longer than %d bytes, which pagetune does not read", what, keys[k].name,
                        PT_CONF_VALUE_MAX - 1);
  out->policy = c->async ? "cuda_async" : c->expandable ? "pytorch_expandable" : "pytorch_native";
  if (c->async) /* PyTorch's backend sets the pool's release threshold to UINT64_MAX (cuda_async's 2^50: never) */
    snprintf(out->sets[out->nsets++], sizeof out->sets[0], "release_threshold=1125899906842624");
  if (c->async && c->expandable) {
    pt_conf_add(c, "expandable_segments", PT_CONF_NOTE, "ignored under backend:cudaMallocAsync, as PyTorch ignores it");
    out->ignored |= 1u << pt_conf_key("expandable_segments");
  }
  for (size_t k = 0; k < sizeof model_knobs / sizeof model_knobs[0]; k++) {
    const char *v = pt_conf_value(c, model_knobs[k]);
    if (!v) continue;
    if (c->async) {
      pt_conf_add(c, model_knobs[k], PT_CONF_NOTE, "ignored: backend:cudaMallocAsync has no such knob (PyTorch ignores it)");
      out->ignored |= 1u << pt_conf_key(model_knobs[k]);
      continue;
    }
    snprintf(out->sets[out->nsets++], sizeof out->sets[0], "%s=%s", model_knobs[k], v);
  }
  const char *seg = pt_conf_value(c, "large_segment_size_mb");
  if (seg && c->expandable && !c->async) {
    snprintf(out->sets[out->nsets++], sizeof out->sets[0], "large_segment_size_mb=%s", seg);
  } else if (seg) {
    pt_conf_add(c, "large_segment_size_mb", PT_CONF_WARNING,
                "not modelled%s: it sets the 20 MiB segment of requests between 1 and 10 MiB (and the minimum of "
                "max_split_size_mb); the model keeps 20 MiB, so results may differ",
                c->async ? " (and ignored by cudaMallocAsync)" : " without expandable segments");
    out->unmodelled |= 1u << pt_conf_key("large_segment_size_mb");
  }
  for (size_t k = 0; k < sizeof unmodelled / sizeof unmodelled[0]; k++)
    if (pt_conf_value(c, unmodelled[k].key)) {
      pt_conf_add(c, unmodelled[k].key, unmodelled[k].matters ? PT_CONF_WARNING : PT_CONF_NOTE, "not modelled: %s",
                  unmodelled[k].what);
      if (unmodelled[k].matters) out->unmodelled |= 1u << pt_conf_key(unmodelled[k].key);
      else out->ignored |= 1u << pt_conf_key(unmodelled[k].key);
    }
  return 0;
}

int pt_conf_of_settings(const char *settings, char *conf, size_t n) {
  static const char key[] = "PYTORCH_CUDA_ALLOC_CONF=";
  if (n) conf[0] = 0;
  for (const char *p = settings; p && *p; p = strchr(p, ';') ? strchr(p, ';') + 1 : NULL) {
    if (strncmp(p, key, sizeof key - 1)) continue;
    p += sizeof key - 1;
    size_t len = strcspn(p, ";");
    if (len >= n) return 0;
    memcpy(conf, p, len);
    conf[len] = 0;
    return 1;
  }
  return 0;
}
