/*
 * export.c — the tuned policy as PyTorch settings (see export.h).
 *
 * The value rules follow PyTorch 2.11's parser (c10/core/AllocatorConfig.cpp
 * and c10/cuda/CUDAAllocatorConfig.cpp; docs/pytorch-caching-allocator.md):
 *   max_split_size_mb, max_non_split_rounding_mb   whole MiB, >= 20 (older: > 20)
 *   garbage_collection_threshold                   a double in the open (0, 1)
 *   roundup_power2_divisions                       a power of two, or [B:v,...,>:v]
 *   expandable_segments, release_lock_on_cudamalloc,
 *   pinned_use_cuda_host_register                  True | False
 *   pinned_num_register_threads                    a power of two <= 128
 *   backend                                        native | cudaMallocAsync
 * An unknown key makes PyTorch throw at the first CUDA allocation, so the
 * export writes none and refuses one in --merge.
 *
 * Values are written as what the knob can mean: a fraction (the GC threshold)
 * to GC_DECIMALS decimals, the resolution tune searches it at, so rounding
 * noise such as 5.55e-17 is 0, which is off, and never turns a knob on;
 * MiB knobs as whole MiB, as the model uses them; divisions as integers.
 */
#include "export.h"
#include "allocconf.h"
#include "file.h"
#include "json.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MIB (UINT64_C(1) << 20)
#define GRANULE (UINT64_C(2) << 20) /* every reservation is a multiple of 2 MiB */
#define RP2_N 16
#define MAX_ITEMS 16
#define VAL_MAX 256
#define NOTE_MAX 480
#define MAX_NOTES 32

/* ---- the keys PyTorch accepts: allocconf.c's, the one reader of conf values ------------------- */

enum {
  K_BACKEND = PT_CK_BACKEND, K_MAX_SPLIT = PT_CK_MAX_SPLIT, K_NON_SPLIT = PT_CK_NON_SPLIT, K_GC = PT_CK_GC,
  K_RP2 = PT_CK_RP2, K_EXPANDABLE = PT_CK_EXPANDABLE
};

/* One key:value of a conf, parsed. */
typedef struct item {
  int key;
  char text[VAL_MAX];  /* the value as written, spaces removed */
  double num;          /* numbers and booleans (0/1); *_mb: INFINITY when unlimited */
  unsigned tab[RP2_N]; /* roundup_power2_divisions per interval */
} item;

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

/* A character allowed in a conf value; everything else could break a shell or Dockerfile line. */
static int conf_char_ok(int c) {
  return isalnum(c) || c == '_' || c == '.' || c == ':' || c == ',' || c == '[' || c == ']' || c == '>' ||
         c == '-' || c == '+' || c == ' ';
}

/*
 * Check key:text (spaces already removed) with the reader lint and sim --conf use (allocconf.c: PyTorch
 * 2.11's rules), then decode what export compares: numbers and booleans into num, the rounding table.
 */
static int item_set(item *it, int key, const char *text, size_t len, pt_err *err) {
  const char *name = pt_conf_key_name(key);
  if (!len) return pt_err_set(err, PT_EFORMAT, "allocator conf: key '%s' has an empty value", name);
  if (len >= sizeof it->text) return pt_err_set(err, PT_ELIMIT, "allocator conf: value of '%s' too long", name);
  it->key = key;
  memcpy(it->text, text, len);
  it->text[len] = 0;
  char one[64 + VAL_MAX];
  snprintf(one, sizeof one, "%s:%s", name, it->text);
  pt_conf *c = calloc(1, sizeof *c);
  if (!c) return pt_err_set(err, PT_ENOMEM, "out of memory");
  pt_conf_read(c, one, "allocator conf");
  for (int i = 0; i < c->n; i++)
    if (c->f[i].sev == PT_CONF_ERROR) {
      int rc = pt_err_set(err, PT_EFORMAT, "%s: %s", name, c->f[i].msg);
      free(c);
      return rc;
    }
  free(c);
  const char *v = it->text;
  memset(it->tab, 0, sizeof it->tab);
  char *end;
  it->num = strtod(v, &end);
  if (*end) it->num = !strcmp(v, "True") || !strcmp(v, "cudaMallocAsync"); /* booleans, the backend */
  if ((key == K_MAX_SPLIT || key == K_NON_SPLIT) && it->num >= PT_EXPORT_MB_UNLIMITED) it->num = INFINITY;
  if (key == K_RP2) {
    double num;
    pt_plist l;
    char why[PT_ERRMSG_MAX];
    if (pt_param_value_parse(v, &num, &l, why, sizeof why) < 0) /* checked above: not reached */
      return pt_err_set(err, PT_EFORMAT, "roundup_power2_divisions: %s", why);
    for (int i = 0; i < RP2_N; i++) it->tab[i] = (unsigned)(l.n ? l.v[i] : num);
  }
  return 0;
}

/* Split a conf value into items; checks characters, keys, values, duplicates. */
static int parse_items(const char *conf, item *items, int *n, pt_err *err) {
  *n = 0;
  if (!conf) return 0;
  size_t len = strlen(conf);
  if (len >= PT_EXPORT_CONF_MAX) return pt_err_set(err, PT_ELIMIT, "allocator conf is %zu bytes, more than %d", len, PT_EXPORT_CONF_MAX - 1);
  char buf[PT_EXPORT_CONF_MAX];
  size_t m = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)conf[i];
    if (!conf_char_ok(c))
      return pt_err_set(err, PT_EFORBID,
                        "allocator conf: character 0x%02x at offset %zu is not allowed (only letters, digits, space and _ . : , [ ] > - +)",
                        c, i);
    if (c != ' ') buf[m++] = (char)c; /* PyTorch drops whitespace too */
  }
  buf[m] = 0;
  if (!m) return 0;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= m; i++) {
    char c = buf[i];
    if (c == '[' && ++depth > 1) return pt_err_set(err, PT_EFORMAT, "allocator conf: nested '[' at offset %zu", i);
    if (c == ']' && --depth < 0) return pt_err_set(err, PT_EFORMAT, "allocator conf: unmatched ']' at offset %zu", i);
    if (c && (c != ',' || depth)) continue;
    if (c == 0 && depth) return pt_err_set(err, PT_EFORMAT, "allocator conf: '[' without ']'");
    const char *s = buf + start;
    size_t ilen = i - start;
    start = i + 1;
    if (!ilen) return pt_err_set(err, PT_EFORMAT, "allocator conf: empty item before offset %zu", i);
    const char *colon = memchr(s, ':', ilen);
    if (!colon) return pt_err_set(err, PT_EFORMAT, "allocator conf: '%.*s' has no ':VALUE'", (int)ilen, s);
    char kname[64];
    size_t klen = (size_t)(colon - s);
    snprintf(kname, sizeof kname, "%.*s", (int)(klen < sizeof kname ? klen : sizeof kname - 1), s);
    int k = klen < sizeof kname ? pt_conf_key(kname) : -1;
    if (k < 0) {
      char list[512] = "";
      for (int j = 0; j < pt_conf_nkeys(); j++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", j ? ", " : "", pt_conf_key_name(j));
      return pt_err_set(err, PT_EFORMAT, "allocator conf: unknown key '%.*s' (PyTorch " PT_CONF_TORCH " accepts: %s)",
                        (int)klen, s, list);
    }
    for (int j = 0; j < *n; j++)
      if (items[j].key == k) return pt_err_set(err, PT_EFORMAT, "allocator conf: key '%s' given twice", kname);
    if (*n == MAX_ITEMS) return pt_err_set(err, PT_ELIMIT, "allocator conf: more than %d keys", MAX_ITEMS);
    int rc = item_set(&items[*n], k, colon + 1, ilen - (size_t)(colon + 1 - s), err);
    if (rc < 0) return rc;
    (*n)++;
  }
  return 0;
}

int pt_export_parse_conf(const char *conf, pt_params *out, char *backend, size_t nb, pt_err *err) {
  item items[MAX_ITEMS];
  int n = 0;
  if (out) memset(out, 0, sizeof *out);
  if (backend && nb) snprintf(backend, nb, "native");
  int rc = parse_items(conf, items, &n, err);
  if (rc < 0) return rc;
  for (int i = 0; i < n; i++) {
    const item *it = &items[i];
    if (it->key == K_BACKEND) {
      if (backend && nb) snprintf(backend, nb, "%s", it->text);
      continue;
    }
    if (!out || it->key > PT_CK_PINNED_THREADS) continue; /* the later keys are no mechanism parameter */
    if (it->key == K_RP2) {
      pt_plist l = {RP2_N, {0}};
      for (int j = 0; j < RP2_N; j++) l.v[j] = it->tab[j];
      rc = pt_params_set_list(out, "roundup_power2_divisions", &l); /* all alike: the number */
    } else {
      rc = pt_params_set(out, pt_conf_key_name(it->key), it->num);
    }
    if (rc < 0) return pt_err_set(err, rc, "allocator conf: too many parameters");
  }
  return 0;
}

/* ---- numbers as PyTorch parses them ---------------------------------------------- */

/* Shortest %g that reads back as exactly d. */
static void fmt_double(char *buf, size_t n, double d) {
  for (int p = 1; p <= 17; p++) {
    snprintf(buf, n, "%.*g", p, d);
    if (strtod(buf, NULL) == d) return;
  }
}

/* A parameter value for the pagetune library's conf: integers plain, inf as "inf". */
static void fmt_param(char *buf, size_t n, double d) {
  if (isinf(d)) snprintf(buf, n, d > 0 ? "inf" : "-inf");
  else if (d == floor(d) && fabs(d) < 9007199254740992.0) snprintf(buf, n, "%.0f", d);
  else fmt_double(buf, n, d);
}

int pt_export_fraction(uint64_t capacity, uint64_t total, char *buf, size_t n, pt_err *err) {
  if (!capacity || !total) return pt_err_set(err, PT_EUSAGE, "memory fraction: capacity and device total must be known");
  if (capacity >= total)
    return pt_err_set(err, PT_EUSAGE,
                      "memory fraction: capacity %llu B is not below the device's %llu B (a fraction of 1.0 means no cap in PyTorch)",
                      (unsigned long long)capacity, (unsigned long long)total);
  if (total > (UINT64_C(1) << 59)) return pt_err_set(err, PT_EUSAGE, "memory fraction: device total too large");
  /* F = 0.d1d2...dk rounded UP at k digits (exact long division), shortest k that works.
   * Up is the safe side: a cap below the tuned capacity could fail a run the model
   * said fits; one less than a 2 MiB step above it admits the very same reservations,
   * since every reservation is a multiple of 2 MiB. */
  char digits[20];
  uint64_t r = capacity;
  for (int k = 1; k <= 17; k++) {
    r *= 10;
    digits[k - 1] = (char)('0' + r / total);
    r %= total;
    char cand[24];
    memcpy(cand, digits, (size_t)k);
    int carry = r != 0, i = k - 1;
    while (carry && i >= 0) {
      if (cand[i] == '9') {
        cand[i--] = '0';
      } else {
        cand[i]++;
        carry = 0;
      }
    }
    if (carry) continue; /* rounded up to 1.0: no cap; try more digits */
    int len = k;
    while (len > 1 && cand[len - 1] == '0') len--;
    char txt[24];
    snprintf(txt, sizeof txt, "0.%.*s", len, cand);
    double f = strtod(txt, NULL);
    uint64_t got = (uint64_t)(f * (double)total); /* what PyTorch computes */
    if (f < 1.0 && got >= capacity && got / GRANULE == capacity / GRANULE) {
      if (strlen(txt) >= n) return pt_err_set(err, PT_ELIMIT, "memory fraction: buffer too small");
      snprintf(buf, n, "%s", txt);
      return 0;
    }
  }
  return pt_err_set(err, PT_EUSAGE, "memory fraction: no decimal below 1.0 gives a cap of %llu B on %llu B",
                    (unsigned long long)capacity, (unsigned long long)total);
}

/* ---- building an export ---------------------------------------------------------------- */

enum { N_APPROX, N_WARN, N_OVERRIDE, N_NOTE };
static const char *const note_prefix[] = {"approximation: ", "warning: ", "override: ", "note: "};

typedef struct built {
  char conf[PT_EXPORT_CONF_MAX];
  int nnotes;
  struct {
    int kind;
    char text[NOTE_MAX];
  } notes[MAX_NOTES];
  int nenv; /* variables besides the two PYTORCH_*ALLOC_CONF ones */
  struct {
    const char *name;
    char value[PT_EXPORT_CONF_MAX];
  } env[2];
  int npy;
  char py[6][NOTE_MAX];
  char fraction[24]; /* set_per_process_memory_fraction argument, or "" */
  int library;       /* the pagetune allocator library is needed */
  int runnable;      /* ... and can run it (no hooks, or hooks resolved into tables: the library runs no Lua) */
  int tables;        /* hook tables go with it (hooks=tables; the JSON form only) */
  char refused[NOTE_MAX]; /* why it cannot run it */
  char lib_conf[PT_EXPORT_CONF_MAX];
  char lib_policy[PT_EXPORT_NAME_MAX]; /* the policy's name as the library reads it */
  int merged;        /* a merge value was given */
} built;

__attribute__((format(printf, 3, 4))) static void note(built *b, int kind, const char *fmt, ...) {
  if (b->nnotes == MAX_NOTES) return;
  b->notes[b->nnotes].kind = kind;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b->notes[b->nnotes].text, NOTE_MAX, fmt, ap);
  va_end(ap);
  b->nnotes++;
}

static int has_param(const pt_params *p, const char *name) {
  if (!p) return 0;
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].name, name)) return 1;
  return 0;
}

static double param(const pt_params *p, const char *name, double dflt) { return p ? pt_params_get(p, name, dflt) : dflt; }

/* Append an export item (text is checked by the same parser a merge value goes through). */
static int add_item(item *items, int *n, int key, const char *text, pt_err *err) {
  if (*n == MAX_ITEMS) return pt_err_set(err, PT_ELIMIT, "export: too many keys");
  int rc = item_set(&items[*n], key, text, strlen(text), err);
  if (rc < 0) return pt_err_prefix(err, PT_EUSAGE, "export produced an invalid value");
  (*n)++;
  return 0;
}

#define GC_DECIMALS 4 /* of garbage_collection_threshold, a fraction of the cap */

/* The caching allocator's knobs as items; notes what cannot be written as given. */
static int caching_items(const pt_params *p, built *b, item *items, int *n, double *gc_out, pt_err *err) {
  char t[64];
  double gc = param(p, "garbage_collection_threshold", 0);
  double split = param(p, "max_split_size_mb", INFINITY);
  double rounding = param(p, "max_non_split_rounding_mb", 20);
  const pt_plist *rp2_list = p ? pt_params_get_list(p, "roundup_power2_divisions") : NULL;
  double rp2 = rp2_list ? 0 : param(p, "roundup_power2_divisions", 0);
  if (isnan(gc) || isnan(split) || isnan(rounding) || isnan(rp2) || gc < 0 || gc > 1 || split < 0 || rounding < 0 || rp2 < 0)
    return pt_err_set(err, PT_EUSAGE, "export: caching parameters out of range (gc %g, max_split_size_mb %g, max_non_split_rounding_mb %g, roundup_power2_divisions %g)",
                      gc, split, rounding, rp2);
  *gc_out = 0;
  double gc_r = round(gc * pow(10, GC_DECIMALS)) / pow(10, GC_DECIMALS);
  if (gc > 0 && gc_r == 0)
    note(b, N_APPROX, "garbage_collection_threshold %.3g rounds to 0 at %d decimals: off (left out)", gc, GC_DECIMALS);
  else if (gc > 0 && gc < 1 && gc_r != gc)
    note(b, N_APPROX, "garbage_collection_threshold %.17g written as %.*f (%d decimals)", gc, GC_DECIMALS, gc_r, GC_DECIMALS);
  gc = gc > 0 && gc < 1 ? gc_r : gc;
  if (gc > 0 && gc < 1) {
    fmt_double(t, sizeof t, gc);
    if (add_item(items, n, K_GC, t, err) < 0) return PT_EUSAGE;
    *gc_out = gc;
  } else if (gc == 1) {
    note(b, N_APPROX, "garbage_collection_threshold 1 left out: PyTorch accepts only the open interval (0, 1), and 1 never triggers (reserved cannot exceed the cap)");
  }
  if (split < PT_EXPORT_MB_UNLIMITED) {
    double mb = floor(split);
    if (mb != split) note(b, N_NOTE, "max_split_size_mb %g written as %.0f: whole MiB, as the model used it", split, mb);
    if (mb < 20) {
      note(b, N_APPROX, "max_split_size_mb %.0f is below PyTorch's minimum of 20; 20 written instead", mb);
      mb = 20;
    }
    if (mb == 20)
      note(b, N_WARN, "max_split_size_mb:20 is accepted by PyTorch 2.11 (it requires >= 20) but older releases required > 20 and reject it at the first allocation; for those write 21");
    snprintf(t, sizeof t, "%.0f", mb);
    if (add_item(items, n, K_MAX_SPLIT, t, err) < 0) return PT_EUSAGE;
  }
  if (rounding != 20) {
    double mb = rounding >= PT_EXPORT_MB_UNLIMITED ? PT_EXPORT_MB_UNLIMITED : floor(rounding);
    if (mb < 20) {
      note(b, N_APPROX, "max_non_split_rounding_mb %g is below PyTorch's minimum of 20; left at PyTorch's default 20", rounding);
    } else if (mb > 20) {
      if (mb != rounding && rounding < PT_EXPORT_MB_UNLIMITED)
        note(b, N_NOTE, "max_non_split_rounding_mb %g written as %.0f: whole MiB, as the model used it", rounding, mb);
      if (mb == PT_EXPORT_MB_UNLIMITED)
        note(b, N_NOTE, "max_non_split_rounding_mb unlimited written as 2147483647 (MiB): the largest value every PyTorch release parses");
      snprintf(t, sizeof t, "%.0f", mb);
      if (add_item(items, n, K_NON_SPLIT, t, err) < 0) return PT_EUSAGE;
    }
  }
  if (rp2_list) { /* PyTorch's list form; the parser below checks it as a merge value would be */
    char lt[VAL_MAX];
    if (add_item(items, n, K_RP2, pt_param_list_format(rp2_list, lt, sizeof lt), err) < 0) return PT_EUSAGE;
  } else if (rp2 >= 2) {
    if (rp2 > UINT32_MAX) return pt_err_set(err, PT_EUSAGE, "export: roundup_power2_divisions %g too large", rp2);
    unsigned d = (unsigned)rp2;
    if (!is_pow2(d)) return pt_err_set(err, PT_EUSAGE, "export: roundup_power2_divisions must be a power of two, not %u", d);
    snprintf(t, sizeof t, "%u", d);
    if (add_item(items, n, K_RP2, t, err) < 0) return PT_EUSAGE;
  }
  return 0;
}

/* Is the merged value of key at PyTorch's default? */
static int is_default(const item *it) {
  switch (it->key) {
  case K_BACKEND: return !strcmp(it->text, "native");
  case K_MAX_SPLIT: return isinf(it->num);
  case K_NON_SPLIT: return it->num == 20;
  case K_GC: return it->num == 0;
  case K_RP2:
    for (int i = 0; i < RP2_N; i++)
      if (it->tab[i] > 1) return 0;
    return 1;
  case K_EXPANDABLE: return it->num == 0;
  default: return 0;
  }
}

static int same_value(const item *a, const item *b) {
  if (a->key != b->key) return 0;
  if (a->key == K_BACKEND) return !strcmp(a->text, b->text);
  if (a->key == K_RP2) {
    for (int i = 0; i < RP2_N; i++)
      if ((a->tab[i] > 1 ? a->tab[i] : 0) != (b->tab[i] > 1 ? b->tab[i] : 0)) return 0;
    return 1;
  }
  return a->num == b->num;
}

static int append(char *dst, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int append(char *dst, size_t n, const char *fmt, ...) {
  size_t len = strlen(dst);
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(dst + len, n - len, fmt, ap);
  va_end(ap);
  return w < 0 || (size_t)w >= n - len ? -1 : 0;
}

/* Keys every mechanism's run decides (the expandable one reads the knobs too): a merge value's setting is overridden (or removed). */
#define OWNED_KEYS (1u << K_BACKEND | 1u << K_EXPANDABLE | 1u << K_MAX_SPLIT | 1u << K_NON_SPLIT | 1u << K_GC | 1u << K_RP2)

static const char *owned_reason(const char *mech, int library, int key) {
  if (library) return "pagetune's allocator replaces PyTorch's, so the tuned run did not use it";
  if (!strcmp(mech, "async_pool")) return key == K_EXPANDABLE || key == K_BACKEND ? "the tuned run used backend:cudaMallocAsync"
                                                                                   : "backend:cudaMallocAsync ignores it (PyTorch warns)";
  if (!strcmp(mech, "direct")) return "the tuned run used no caching (PYTORCH_NO_CUDA_MEMORY_CACHING=1)";
  if (!strcmp(mech, "expandable"))
    return key == K_EXPANDABLE || key == K_BACKEND ? "the tuned run used the native allocator with expandable segments"
                                                   : "the tuned run used expandable segments with this key at its default";
  return "the tuned run used the native caching allocator without expandable segments, at this key's default";
}

/* Sanitised copy for a value of PAGETUNE_ALLOC_CONF: [A-Za-z0-9_.-], others become '_'. */
static int sanitize_name(char *dst, size_t n, const char *src) {
  int changed = 0;
  size_t i = 0;
  for (; src[i] && i + 1 < n; i++) {
    int c = (unsigned char)src[i];
    int ok = isalnum(c) || c == '_' || c == '.' || c == '-';
    dst[i] = ok ? (char)c : '_';
    changed |= !ok;
  }
  changed |= src[i] != 0;
  dst[i] = 0;
  return changed;
}

static const pt_mech_param *mech_param(const pt_mech_ops *ops, const char *name) {
  for (const pt_mech_param *mp = ops->params; mp && mp->name; mp++)
    if (!strcmp(mp->name, name)) return mp;
  return NULL;
}

static int of_run(const pt_mech_ops *ops, const char *name) {
  for (const char *const *r = ops->of_run; r && *r; r++)
    if (!strcmp(*r, name)) return 1;
  return 0;
}

static int mech_declares(const pt_mech_ops *ops, const char *name) {
  return !strcmp(name, "device_total_bytes") || mech_param(ops, name); /* every mechanism is told the device's size */
}

/*
 * Whether an async_pool run ever gives memory back: PyTorch's cudaMallocAsync backend sets the pool's release
 * threshold to UINT64_MAX (never), which a threshold at or above the device's memory (2^50, the mechanism's
 * largest, when the device is unknown) equals.  A pool that releases needs the library.
 */
static int async_releases(const pt_params *p, uint64_t total) {
  double thr = param(p, "release_threshold", 0);
  return param(p, "trim_every_free", 0) == 1 || thr < (total ? (double)total : PT_EXPORT_ASYNC_NEVER);
}

static int build(const pt_export_input *in, const char *merge, built *b, pt_err *err) {
  memset(b, 0, sizeof *b);
  if (!in || !in->mechanism) return pt_err_set(err, PT_EUSAGE, "export: no mechanism");
  const char *mech = in->mechanism;
  const pt_mech_ops *ops = pt_mech_find(mech);
  if (!ops) return pt_err_set(err, PT_EUSAGE, "export: unknown mechanism '%.64s' (known: %s)", mech, pt_mech_names());
  const pt_params *p = in->params;
  if (p)
    for (int i = 0; i < p->n; i++)
      if (isnan(p->v[i].value) && !p->v[i].list.n) return pt_err_set(err, PT_EUSAGE, "export: parameter %s is NaN", p->v[i].name);
  b->merged = merge != NULL;
  uint64_t total = in->device_total_bytes;
  if (!total && has_param(p, "device_total_bytes")) {
    double t = param(p, "device_total_bytes", 0);
    if (t > 0 && t < 1.8e19) total = (uint64_t)t;
  }
  b->library = in->has_hooks || !strcmp(mech, "stitch") || (!strcmp(mech, "async_pool") && async_releases(p, total));
  int resolved = in->has_hooks && in->tables;
  b->runnable = b->library && (!in->has_hooks || resolved);
  b->tables = resolved && (in->tables->round.n || in->tables->segment_size.n);
  if (b->library && !b->runnable)
    snprintf(b->refused, sizeof b->refused, "%s", in->hooks_refused && *in->hooks_refused ? in->hooks_refused : "the policy has hooks");

  item ex[MAX_ITEMS];
  int nex = 0;
  double gc = 0;
  int rc = 0;

  /* parameters the mechanism does not know (policy-only, read by hooks) */
  if (p && !b->library)
    for (int i = 0; i < p->n; i++) {
      int known = !strcmp(p->v[i].name, "device_total_bytes");
      for (const pt_mech_param *mp = ops->params; mp->name && !known; mp++) known = !strcmp(mp->name, p->v[i].name);
      if (!known)
        note(b, N_NOTE, "parameter %s=%g is not a parameter of the %s mechanism: not exported", p->v[i].name, p->v[i].value, mech);
    }

  if (b->library) {
    if (sanitize_name(b->lib_policy, sizeof b->lib_policy, in->policy && *in->policy ? in->policy : "unnamed"))
      note(b, N_NOTE, "policy name written as '%s' for the library (only letters, digits, _ . - are kept, at most 63)", b->lib_policy);
    if (append(b->lib_conf, sizeof b->lib_conf, "mechanism=%s,policy=%s", mech, b->lib_policy) < 0) goto toolong;
    if (in->capacity && append(b->lib_conf, sizeof b->lib_conf, ",capacity=%llu", (unsigned long long)in->capacity) < 0) goto toolong;
    if (p)
      for (int i = 0; i < p->n; i++) {
        const char *nm = p->v[i].name;
        for (const char *c = nm; *c; c++)
          if (!(isalnum((unsigned char)*c) || *c == '_' || *c == '.'))
            return pt_err_set(err, PT_EFORBID, "export: parameter name '%.48s' has a character other than letters, digits, _ and .", nm);
        if (b->runnable && !mech_declares(ops, nm)) { /* the library refuses a parameter its mechanism does not take */
          note(b, N_NOTE, "parameter %s=%g is not a parameter of the %s mechanism: not given to the library%s", nm, p->v[i].value, mech,
               b->tables ? " (the hook tables hold what the hooks made of it)" : "");
          continue;
        }
        const pt_mech_param *mp = mech_param(ops, nm);
        if (mp && of_run(ops, nm)) { /* the library runs at the process's start, on the GPU it has */
          if (p->v[i].value != mp->dflt)
            note(b, N_NOTE, "parameter %s=%g describes the run the model replayed (%s), not a setting: not given to the library",
                 nm, p->v[i].value, mp->doc);
          continue;
        }
        if (b->runnable && !strcmp(nm, "device_total_bytes") && in->device_total_bytes &&
            p->v[i].value != (double)in->device_total_bytes) {
          note(b, N_NOTE, "device_total_bytes=%g differs from the device's %llu B: not given to the library", p->v[i].value,
               (unsigned long long)in->device_total_bytes);
          continue;
        }
        char v[256];
        if (p->v[i].list.n) pt_param_list_format(&p->v[i].list, v, sizeof v); /* PyTorch's form; the library reads it */
        else fmt_param(v, sizeof v, p->v[i].value);
        if (append(b->lib_conf, sizeof b->lib_conf, ",%s=%s", nm, v) < 0) goto toolong;
      }
    if (in->has_hooks && !resolved && append(b->lib_conf, sizeof b->lib_conf, ",hooks=policy") < 0) goto toolong;
    if (b->tables && append(b->lib_conf, sizeof b->lib_conf, ",hooks=tables") < 0) goto toolong;
    if (b->tables) {
      char what[96] = "";
      if (in->tables->round.n) snprintf(what, sizeof what, "round: %d piece%s", in->tables->round.n, in->tables->round.n > 1 ? "s" : "");
      if (in->tables->segment_size.n)
        snprintf(what + strlen(what), sizeof what - strlen(what), "%ssegment_size: %d piece%s", what[0] ? ", " : "",
                 in->tables->segment_size.n, in->tables->segment_size.n > 1 ? "s" : "");
      note(b, N_NOTE, "the policy's hooks travel as tables (\"hook_tables\"; %s), resolved by sampling, exact bisection and verification, "
                      "which cannot prove agreement at sizes never asked (docs/export.md); only the JSON form carries them: the library "
                      "reads them from the file PAGETUNE_CONFIG names and refuses hooks=tables in PAGETUNE_ALLOC_CONF", what);
    }
    if (resolved && in->page_size_dropped)
      note(b, N_APPROX, "the policy's page_size hook is left out: page size is a model-only dimension (the driver chooses page sizes; "
                        "through the VMM API a policy picks handle sizes), so the library ignores it");
    if (b->runnable && !b->tables) { /* the conf string alone configures the library */
      b->env[b->nenv].name = "PAGETUNE_ALLOC_CONF";
      snprintf(b->env[b->nenv].value, sizeof b->env[b->nenv].value, "%s", b->lib_conf);
      b->nenv++;
    }
    if (b->runnable) {
      note(b, N_WARN, "pagetune's allocator library (libpagetune_alloc.so) replaces PyTorch's allocator in the process; under it "
                      "torch.cuda.memory_stats() and memory history, cuDNN benchmark (cacheInfo) and CUDA graphs' private pools do not work: "
                      "use pagetune_alloc.stats(), empty_cache() and reset_peak_stats(); a request it cannot serve raises RuntimeError, "
                      "not torch.OutOfMemoryError");
    } else {
      note(b, N_WARN, "NOT RUNNABLE BY THE LIBRARY: %s; the policy's hooks (Lua) run only in pagetune's model; libpagetune_alloc.so runs "
                      "no Lua and refuses this configuration (hooks=policy), so nothing here installs it", b->refused);
    }
    if (!strcmp(mech, "stitch"))
      note(b, N_APPROX, "stitch (VMM stitching of free pages) is not expressible in PyTorch's allocator conf; it needs pagetune's allocator library");
    if (!strcmp(mech, "async_pool") && !in->has_hooks) {
      char t[48];
      fmt_param(t, sizeof t, param(p, "release_threshold", 0));
      note(b, N_APPROX, "the pool's release (release_threshold %s B, trim_every_free %d) is not expressible: PyTorch's cudaMallocAsync "
                        "backend never releases (threshold UINT64_MAX); the library runs the pool as tuned, for programs that "
                        "allocate on one stream (it hands freed memory to any request at once, and refuses a second stream)",
           t, param(p, "trim_every_free", 0) == 1);
    }
    if (in->has_hooks)
      note(b, N_APPROX, "the policy's hooks (page sizes, per-size thresholds, rounding, collection) are not expressible in PyTorch's allocator "
                        "conf%s", resolved ? "; the library runs its size hooks as tables" : ", and the library does not run them");
    if (in->capacity && b->runnable)
      note(b, N_NOTE, "the cap (capacity=%llu) goes to the library: set_per_process_memory_fraction does not apply to a pluggable allocator",
           (unsigned long long)in->capacity);
    /* the nearest PyTorch setting: what to run without the library */
    const char *near = "expandable_segments:True";
    char nearbuf[PT_EXPORT_CONF_MAX] = "";
    if (!strcmp(mech, "caching")) {
      built *tmp = malloc(sizeof *tmp);
      pt_export_input plain = *in;
      plain.has_hooks = 0;
      plain.tables = NULL;
      if (tmp && build(&plain, NULL, tmp, err) == 0) snprintf(nearbuf, sizeof nearbuf, "%s", tmp->conf);
      free(tmp);
      near = nearbuf;
    } else if (!strcmp(mech, "async_pool")) {
      near = "backend:cudaMallocAsync";
    } else if (!strcmp(mech, "direct")) {
      near = NULL;
    }
    const char *without = b->runnable ? "without the library (keeping what a pluggable allocator loses)" : "instead";
    if (near && *near)
      note(b, N_NOTE, "%s, the nearest PyTorch setting is PYTORCH_ALLOC_CONF='%s' (without what the library adds)", without, near);
    else if (near)
      note(b, N_NOTE, "%s, the nearest PyTorch setting is PyTorch's default caching allocator (without what the library adds)", without);
    b->npy = 0;
    if (b->runnable) {
      snprintf(b->py[b->npy++], NOTE_MAX, "import pagetune_alloc  # on PYTHONPATH; finds the library by PAGETUNE_ALLOC_LIB, else beside itself");
      snprintf(b->py[b->npy++], NOTE_MAX, "pagetune_alloc.install()  # = change_current_allocator(CUDAPluggableAllocator(LIB, \"%s\", \"%s\"))",
               PT_EXPORT_LIB_ALLOC, PT_EXPORT_LIB_FREE);
    }
  } else if (!strcmp(mech, "caching")) {
    rc = caching_items(p, b, ex, &nex, &gc, err);
    if (rc < 0) return rc;
  } else if (!strcmp(mech, "expandable")) {
    if (add_item(ex, &nex, K_EXPANDABLE, "True", err) < 0) return PT_EUSAGE;
    rc = caching_items(p, b, ex, &nex, &gc, err); /* PyTorch reads them with expandable segments too */
    if (rc < 0) return rc;
    double large = param(p, "large_segment_size_mb", 20);
    if (large != 20)
      note(b, N_APPROX, "large_segment_size_mb %g (the large pool's page size) is not exported: PyTorch 2.11 accepts the key but earlier "
                        "releases reject it as unknown (pagetune's list of them, docs/design.md, leaves it out); PyTorch's default is 20", large);
  } else if (!strcmp(mech, "async_pool")) {
    if (add_item(ex, &nex, K_BACKEND, "cudaMallocAsync", err) < 0) return PT_EUSAGE;
    char t[48];
    fmt_param(t, sizeof t, param(p, "release_threshold", 0));
    note(b, N_NOTE, "release_threshold %s B is at or above the device's memory: the pool never gives memory back, as PyTorch's "
                    "cudaMallocAsync backend does (its threshold is UINT64_MAX): freed memory stays in the pool until torch.cuda.empty_cache()", t);
    note(b, N_NOTE, "backend is read once, when the process starts: set it in the environment, not from Python");
  } else if (!strcmp(mech, "direct")) {
    b->env[b->nenv].name = "PYTORCH_NO_CUDA_MEMORY_CACHING";
    snprintf(b->env[b->nenv].value, sizeof b->env[b->nenv].value, "1");
    b->nenv++;
    note(b, N_APPROX, "direct (one cudaMalloc/cudaFree per request) has no allocator-conf key; the nearest is PYTORCH_NO_CUDA_MEMORY_CACHING=1, "
                      "which makes every tensor allocation one cudaMalloc and every free one cudaFree, but PyTorch documents it as a "
                      "debugging switch");
  }

  /* the cap */
  if (!b->library) {
    if (in->capacity) {
      pt_err ferr = {{0}};
      if (!strcmp(mech, "direct")) {
        note(b, N_WARN, "the tuned run had a cap of %llu B, but under PYTORCH_NO_CUDA_MEMORY_CACHING PyTorch bypasses its allocator and "
                        "does not enforce set_per_process_memory_fraction (seen with PyTorch 2.11)", (unsigned long long)in->capacity);
      } else if (total && pt_export_fraction(in->capacity, total, b->fraction, sizeof b->fraction, &ferr) == 0) {
        uint64_t got = (uint64_t)(strtod(b->fraction, NULL) * (double)total);
        snprintf(b->py[b->npy++], NOTE_MAX, "import torch");
        snprintf(b->py[b->npy++], NOTE_MAX,
                 "torch.cuda.set_per_process_memory_fraction(%s)  # on %.64s (%llu B): cap int(%s*%llu) = %llu B >= the tuned %llu B: "
                 "rounded up, never below it",
                 b->fraction, in->device_name ? in->device_name : "the device", (unsigned long long)total, b->fraction,
                 (unsigned long long)total, (unsigned long long)got, (unsigned long long)in->capacity);
      } else if (total) {
        note(b, N_WARN, "the tuned run's cap cannot be set through set_per_process_memory_fraction: %s", ferr.msg);
      } else {
        /* device unknown: compute F on the machine; (cap+1)/total keeps int(F*total) >= cap */
        snprintf(b->py[b->npy++], NOTE_MAX, "import torch");
        snprintf(b->py[b->npy++], NOTE_MAX,
                 "torch.cuda.set_per_process_memory_fraction(%llu / torch.cuda.get_device_properties(0).total_memory)  "
                 "# %llu B + 1: int(F*total) never falls below the tuned cap",
                 (unsigned long long)in->capacity + 1, (unsigned long long)in->capacity);
        if (in->device_name)
          note(b, N_NOTE, "no GPU description '%.64s' here to know the device's total memory (export --gpu NAME names one): "
                          "the fraction line computes it on the machine", in->device_name);
        else
          note(b, N_NOTE, "the device's total memory is not known to the export: the fraction line computes it on the machine");
      }
      if (b->npy)
        note(b, N_NOTE, "the tuned run had a cap of %llu B; the Python line sets the matching cap "
                        "(the fraction is rounded up: a lower cap could fail a run the model said fits)", (unsigned long long)in->capacity);
    } else if (gc > 0) {
      note(b, N_WARN, "garbage_collection_threshold does nothing without a memory-fraction cap "
                      "(torch.cuda.set_per_process_memory_fraction), and the tuned run had none (no --capacity): it did nothing there either");
    }
  }

  /* merge */
  item mg[MAX_ITEMS];
  int nmg = 0;
  if (merge) {
    rc = parse_items(merge, mg, &nmg, err);
    if (rc < 0) return pt_err_prefix(err, rc, "--merge");
  }
  unsigned owned = OWNED_KEYS;
  int used[MAX_ITEMS] = {0};
  for (int i = 0; i < nmg; i++) {
    const item *m = &mg[i], *e = NULL;
    for (int j = 0; j < nex; j++)
      if (ex[j].key == m->key) {
        e = &ex[j];
        used[j] = 1;
      }
    const char *name = pt_conf_key_name(m->key);
    const char *text = m->text;
    if (e) {
      if (!same_value(e, m))
        note(b, N_OVERRIDE, "existing %s:%s replaced by %s:%s (the tuned value)", name, m->text, name, e->text);
      text = e->text;
    } else if ((owned >> m->key & 1) && !is_default(m)) {
      note(b, N_OVERRIDE, "existing %s:%s removed: %s", name, m->text, owned_reason(mech, b->library, m->key));
      continue;
    }
    if (append(b->conf, sizeof b->conf, "%s%s:%s", b->conf[0] ? "," : "", name, text) < 0) goto toolong;
  }
  for (int j = 0; j < nex; j++)
    if (!used[j] && append(b->conf, sizeof b->conf, "%s%s:%s", b->conf[0] ? "," : "", pt_conf_key_name(ex[j].key), ex[j].text) < 0)
      goto toolong;
  return 0;
toolong:
  return pt_err_set(err, PT_ELIMIT, "export: configuration longer than %d bytes", PT_EXPORT_CONF_MAX - 1);
}

int pt_export_conf(const pt_export_input *in, const char *merge, char *conf, size_t n, char *notes, size_t nn, pt_err *err) {
  built *b = malloc(sizeof *b);
  if (!b) return pt_err_set(err, PT_ENOMEM, "export: out of memory");
  int rc = build(in, merge, b, err);
  if (rc == 0 && conf) {
    if (strlen(b->conf) >= n) rc = pt_err_set(err, PT_ELIMIT, "export: conf buffer too small");
    else memcpy(conf, b->conf, strlen(b->conf) + 1);
  }
  if (rc == 0 && notes && nn) {
    notes[0] = 0;
    for (int i = 0; i < b->nnotes && rc == 0; i++)
      if (append(notes, nn, "%s%s\n", note_prefix[b->notes[i].kind], b->notes[i].text) < 0)
        rc = pt_err_set(err, PT_ELIMIT, "export: notes buffer too small");
    for (int i = 0; i < b->npy && rc == 0 && !b->library; i++) /* the library's lines install it: the writers say how */
      if (b->py[i][0] != '#' && strncmp(b->py[i], "import ", 7) &&
          append(notes, nn, "note: in Python, before the first CUDA allocation: %s\n", b->py[i]) < 0)
        rc = pt_err_set(err, PT_ELIMIT, "export: notes buffer too small");
  }
  free(b);
  return rc;
}

int pt_export_plan_of(const pt_export_input *in, pt_export_plan *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  built *b = malloc(sizeof *b);
  if (!b) return pt_err_set(err, PT_ENOMEM, "export: out of memory");
  int rc = build(in, NULL, b, err);
  if (rc == 0) {
    out->library = b->library;
    out->runnable = b->runnable;
    snprintf(out->refused, sizeof out->refused, "%s", b->refused);
    snprintf(out->conf, sizeof out->conf, "%s", b->conf);
    for (int i = 0; i < b->nenv && !b->library; i++) { /* the library's own variable: the caller sets up the library */
      snprintf(out->env[out->nenv].name, sizeof out->env[out->nenv].name, "%s", b->env[i].name);
      snprintf(out->env[out->nenv].value, sizeof out->env[out->nenv].value, "%s", b->env[i].value);
      out->nenv++;
    }
    snprintf(out->fraction, sizeof out->fraction, "%s", b->fraction);
  }
  free(b);
  return rc;
}

/* ---- writers ------------------------------------------------------------------------ */

/* Why both variables, with one value (PyTorch 2.11 on the H200 read PYTORCH_CUDA_ALLOC_CONF when the two differed). */
#define BOTH_NOTE                                                                                              \
  "# Both, same value: PyTorch reads either name (2.11 prefers PYTORCH_CUDA_ALLOC_CONF when both are set);\n" \
  "# older PyTorch and tools such as vLLM read only PYTORCH_CUDA_ALLOC_CONF.\n"

/* Text for a comment line: control characters become '?'. */
static void put_comment_text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
  }
}


static void put_header(FILE *f, const pt_export_input *in) {
  fputs("# pagetune export: policy '", f);
  put_comment_text(f, in->policy ? in->policy : "unnamed");
  fprintf(f, "' (mechanism %s)", in->mechanism);
  if (in->run_id >= 0) fprintf(f, ", run %lld", (long long)in->run_id);
  if (in->trace) {
    fputs(", trace '", f);
    put_comment_text(f, in->trace);
    fputc('\'', f);
  }
  fputc('\n', f);
}

static void put_notes_comments(FILE *f, const built *b) {
  for (int i = 0; i < b->nnotes; i++) {
    fprintf(f, "# %s", note_prefix[b->notes[i].kind]);
    put_comment_text(f, b->notes[i].text);
    fputc('\n', f);
  }
}

/* image: the lines go with the Dockerfile's, whose sitecustomize.py installs the library. */
static void put_python_comments(FILE *f, const built *b, int image) {
  if (!b->npy) return;
  fputs(!b->library ? "# In the program, before the first CUDA allocation:\n"
        : image     ? "# sitecustomize.py does this; by hand (PAGETUNE_DISABLE=1 then), before the first CUDA allocation:\n"
                    : "# In the program, before the first CUDA allocation (pagetune_alloc.py and the library are installed\n"
                      "# side by side in pagetune's pkglibdir: put it on PYTHONPATH):\n", f);
  for (int i = 0; i < b->npy; i++) {
    fputs("#   ", f);
    put_comment_text(f, b->py[i]);
    fputc('\n', f);
  }
}

/* A library export the library refuses: the conf it would refuse, as a comment. */
static void put_not_runnable(FILE *f, const built *b) {
  fputs("# NOT RUNNABLE BY THE LIBRARY (", f);
  put_comment_text(f, b->refused);
  fputs("): nothing to install. The conf libpagetune_alloc.so would refuse:\n#   ", f);
  put_comment_text(f, b->lib_conf);
  fputc('\n', f);
}

static void write_shell(FILE *f, const pt_export_input *in, const built *b) {
  put_header(f, in);
  put_notes_comments(f, b);
  /* every value is made of [A-Za-z0-9_.:,[]>+-=]: single quotes are enough */
  if (b->conf[0] || b->merged) {
    fputs(BOTH_NOTE, f);
    if (!b->conf[0]) fputs("# (empty: the existing value is replaced by PyTorch's defaults)\n", f);
    fprintf(f, "export PYTORCH_ALLOC_CONF='%s'\nexport PYTORCH_CUDA_ALLOC_CONF='%s'\n", b->conf, b->conf);
  } else {
    fputs("# PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF: nothing to set (PyTorch's defaults)\n", f);
  }
  if (b->tables)
    fputs("# pagetune's allocator library: the policy's hooks travel as tables, which only the JSON form carries: write it with\n"
          "# --format json and set PAGETUNE_CONFIG to its path (PAGETUNE_ALLOC_CONF cannot hold them)\n", f);
  else if (b->runnable)
    fputs("# pagetune's allocator library reads PAGETUNE_ALLOC_CONF (or the file PAGETUNE_CONFIG names, as --format json writes it):\n", f);
  else if (b->library)
    put_not_runnable(f, b);
  for (int i = 0; i < b->nenv; i++) fprintf(f, "export %s='%s'\n", b->env[i].name, b->env[i].value);
  put_python_comments(f, b, 0);
}

/* The files an image of a library export holds: where they lie in the build context (under
   PT_EXPORT_CONTEXT_SUBDIR) and in the image. */
static const struct {
  const char *name, *image, *what;
} image_files[] = {
    {"libpagetune_alloc.so", PT_EXPORT_IMAGE_LIB, "the library: pagetune's pkglibdir, or backend/.libs/ of a build"},
    {"pagetune_alloc.py", PT_EXPORT_IMAGE_PYDIR "/pagetune_alloc.py", "the Python module, installed beside the library"},
    {"sitecustomize.py", PT_EXPORT_IMAGE_PYDIR "/sitecustomize.py", "pagetune_sitecustomize.py, installed beside the library"},
    {"pagetune.json", PT_EXPORT_IMAGE_CONFIG, "this export with --format json"},
};
#define N_IMAGE_FILES (sizeof image_files / sizeof image_files[0])

/* context: 1 when --context wrote the files the COPY lines name. */
static void write_dockerfile(FILE *f, const pt_export_input *in, const built *b, int context) {
  put_header(f, in);
  put_notes_comments(f, b);
  if (b->conf[0] || b->merged) {
    fputs(BOTH_NOTE, f);
    fprintf(f, "ENV PYTORCH_ALLOC_CONF=\"%s\"\nENV PYTORCH_CUDA_ALLOC_CONF=\"%s\"\n", b->conf, b->conf);
  } else {
    fputs("# PYTORCH_ALLOC_CONF, PYTORCH_CUDA_ALLOC_CONF: nothing to set (PyTorch's defaults)\n", f);
  }
  if (b->runnable) {
    fputs("# pagetune's allocator library, its configuration, and sitecustomize.py, which installs the library right after\n"
          "# torch is first imported when CUDA is available (PAGETUNE_DISABLE=1: a process keeps PyTorch's allocator).\n", f);
    if (context) {
      fputs("# --context wrote the files these COPY lines name: build with that directory as the context.\n", f);
    } else {
      fputs("# Place in the build context first (or run this export with --context DIR, which writes them):\n", f);
      for (size_t i = 0; i < N_IMAGE_FILES; i++)
        fprintf(f, "#   " PT_EXPORT_CONTEXT_SUBDIR "/%-22s %s\n", image_files[i].name, image_files[i].what);
    }
    for (size_t i = 0; i < N_IMAGE_FILES; i++)
      fprintf(f, "COPY " PT_EXPORT_CONTEXT_SUBDIR "/%s %s\n", image_files[i].name, image_files[i].image);
    fputs("ENV PAGETUNE_CONFIG=\"" PT_EXPORT_IMAGE_CONFIG "\"\n"
          "ENV PAGETUNE_ALLOC_LIB=\"" PT_EXPORT_IMAGE_LIB "\"\n"
          "ENV PYTHONPATH=\"" PT_EXPORT_IMAGE_PYDIR "${PYTHONPATH:+:$PYTHONPATH}\"\n", f); /* no empty entry (the working directory) */
  } else if (b->library) {
    put_not_runnable(f, b);
  }
  for (int i = 0; i < b->nenv; i++)
    if (!b->runnable) fprintf(f, "ENV %s=\"%s\"\n", b->env[i].name, b->env[i].value); /* the library's: PAGETUNE_CONFIG above */
  put_python_comments(f, b, 1);
}

static void put_json_notes(FILE *f, const built *b, const char *key, int kind) {
  fprintf(f, "  \"%s\": [", key);
  int first = 1;
  for (int i = 0; i < b->nnotes; i++)
    if (b->notes[i].kind == kind) {
      fputs(first ? "" : ", ", f);
      pt_json_str(f, b->notes[i].text);
      first = 0;
    }
  fputs("]", f);
}

/* One table as [[lo, hi, "form", arg], ...] (identity: [lo, hi, "identity"]), as backend/libconf.c reads it. */
static void write_json_table(FILE *f, const pt_sizetab *t) {
  fputc('[', f);
  for (int i = 0; i < t->n; i++) {
    const pt_sizetab_piece *p = &t->p[i];
    fprintf(f, "%s[%llu, %llu, \"%s\"", i ? ", " : "", (unsigned long long)p->lo, (unsigned long long)p->hi, pt_sizetab_form_name(p->form));
    if (p->form != PT_SIZETAB_IDENTITY) fprintf(f, ", %llu", (unsigned long long)p->arg);
    fputc(']', f);
  }
  fputc(']', f);
}

static void write_json_tables(FILE *f, const pt_sizetab_set *t) {
  fputs("  \"hook_tables\": {", f);
  if (t->round.n) {
    fputs("\"round\": ", f);
    write_json_table(f, &t->round);
  }
  if (t->segment_size.n) {
    fputs(t->round.n ? ", \"segment_size\": " : "\"segment_size\": ", f);
    write_json_table(f, &t->segment_size);
  }
  fputs("},\n", f);
}

static void write_json(FILE *f, const pt_export_input *in, const built *b) {
  fputs("{\n  \"policy\": ", f);
  pt_json_str(f, b->library ? b->lib_policy : in->policy); /* a library export: the name as the library reads it */
  fputs(",\n  \"mechanism\": ", f);
  pt_json_str(f, in->mechanism);
  if (in->run_id >= 0) fprintf(f, ",\n  \"run_id\": %lld", (long long)in->run_id);
  else fputs(",\n  \"run_id\": null", f);
  fputs(",\n  \"trace\": ", f);
  pt_json_str(f, in->trace);
  fputs(",\n  \"pytorch_alloc_conf\": ", f);
  pt_json_str(f, b->conf);
  fputs(",\n  \"pytorch_cuda_alloc_conf\": ", f);
  pt_json_str(f, b->conf);
  fputs(",\n  \"env\": {", f);
  int first = 1;
  if (b->conf[0] || b->merged) {
    fputs("\"PYTORCH_ALLOC_CONF\": ", f);
    pt_json_str(f, b->conf);
    fputs(", \"PYTORCH_CUDA_ALLOC_CONF\": ", f);
    pt_json_str(f, b->conf);
    first = 0;
  }
  for (int i = 0; i < b->nenv; i++) {
    fprintf(f, "%s\"%s\": ", first ? "" : ", ", b->env[i].name);
    pt_json_str(f, b->env[i].value);
    first = 0;
  }
  fputs("},\n  \"python\": [", f);
  for (int i = 0; i < b->npy; i++) {
    fputs(i ? ", " : "", f);
    pt_json_str(f, b->py[i]);
  }
  fputs("],\n", f);
  fprintf(f, "  \"capacity\": %llu,\n  \"device_total_bytes\": %llu,\n", (unsigned long long)in->capacity,
          (unsigned long long)in->device_total_bytes);
  fprintf(f, "  \"memory_fraction\": %s,\n", b->fraction[0] ? b->fraction : "null");
  if (b->library) {
    fprintf(f, "  \"pagetune_library\": {\"status\": \"%s\", \"path\": \"" PT_EXPORT_IMAGE_LIB "\", \"alloc_fn\": \"" PT_EXPORT_LIB_ALLOC
               "\", \"free_fn\": \"" PT_EXPORT_LIB_FREE "\", \"config\": \"" PT_EXPORT_IMAGE_CONFIG "\", \"python_path\": \""
               PT_EXPORT_IMAGE_PYDIR "\", \"conf\": ",
            b->runnable ? "runnable" : "not runnable by the library: the policy has hooks (Lua), which it does not run");
    pt_json_str(f, b->lib_conf);
    if (!b->runnable) {
      fputs(", \"reason\": ", f);
      pt_json_str(f, b->refused);
    }
    fputs("},\n", f);
    if (b->tables) write_json_tables(f, in->tables);
  } else {
    fputs("  \"pagetune_library\": null,\n", f);
  }
  put_json_notes(f, b, "approximations", N_APPROX);
  fputs(",\n", f);
  put_json_notes(f, b, "warnings", N_WARN);
  fputs(",\n", f);
  put_json_notes(f, b, "overrides", N_OVERRIDE);
  fputs(",\n", f);
  put_json_notes(f, b, "notes", N_NOTE);
  fputs("\n}\n", f);
}

int pt_export_write(FILE *f, const pt_export_input *in, const char *format, const char *merge, pt_err *err) {
  if (!f || !format) return pt_err_set(err, PT_EUSAGE, "export: no output or format");
  int kind = !strcmp(format, "env") ? 0 : !strcmp(format, "dockerfile") ? 1 : !strcmp(format, "json") ? 2 : -1;
  if (kind < 0) return pt_err_set(err, PT_EUSAGE, "export: unknown format '%.32s' (env, dockerfile, json)", format);
  built *b = malloc(sizeof *b);
  if (!b) return pt_err_set(err, PT_ENOMEM, "export: out of memory");
  int rc = build(in, merge, b, err);
  if (rc == 0) {
    if (kind == 0) write_shell(f, in, b);
    else if (kind == 1) write_dockerfile(f, in, b, 0);
    else write_json(f, in, b);
    if (ferror(f)) rc = pt_err_set(err, PT_EIO, "export: write failed");
  }
  free(b);
  return rc;
}

/* ---- the build context: the files the COPY lines name --------------------------------- */

/* dir, made when missing (its parent must exist). */
static int make_dir(const char *dir, pt_err *err) {
  if (mkdir(dir, 0755) == 0 || errno == EEXIST) {
    struct stat st;
    if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) return 0;
    return pt_err_set(err, PT_EIO, "%s: not a directory", dir);
  }
  return pt_err_set(err, PT_EIO, "%s: cannot make the directory: %s", dir, strerror(errno));
}

/* dst written whole, then renamed into place (a new dst.tmp.XXXXXX first): from src, or (src NULL) by b's JSON. */
static int put_file(const char *dst, const char *src, const pt_export_input *in, const built *b, mode_t mode, pt_err *err) {
  char tmp[4096];
  FILE *in_f = NULL;
  if (src && !(in_f = fopen(src, "rb"))) return pt_err_set(err, PT_EIO, "%s: cannot open: %s", src, strerror(errno));
  FILE *out = pt_file_fopen_beside(dst, "wb", tmp, sizeof tmp, err);
  if (!out) {
    if (in_f) fclose(in_f);
    return PT_EIO;
  }
  int rc = 0;
  if (in_f) {
    char buf[65536];
    size_t n;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, in_f)) > 0)
      if (fwrite(buf, 1, n, out) != n) rc = pt_err_set(err, PT_EIO, "%s: write failed: %s", tmp, strerror(errno));
    if (rc == 0 && ferror(in_f)) rc = pt_err_set(err, PT_EIO, "%s: read failed", src);
    fclose(in_f);
  } else {
    write_json(out, in, b);
  }
  if (fclose(out) != 0 && rc == 0) rc = pt_err_set(err, PT_EIO, "%s: write failed: %s", tmp, strerror(errno));
  if (rc == 0 && chmod(tmp, mode) != 0) rc = pt_err_set(err, PT_EIO, "%s: chmod: %s", tmp, strerror(errno));
  if (rc == 0 && rename(tmp, dst) != 0) rc = pt_err_set(err, PT_EIO, "%s: cannot rename into place: %s", dst, strerror(errno));
  if (rc < 0) remove(tmp);
  return rc;
}

int pt_export_write_context(FILE *f, const pt_export_input *in, const char *merge, const pt_export_context *ctx, pt_err *err) {
  if (!f || !ctx || !ctx->dir || !*ctx->dir) return pt_err_set(err, PT_EUSAGE, "export: no output or context directory");
  built *b = malloc(sizeof *b);
  if (!b) return pt_err_set(err, PT_ENOMEM, "export: out of memory");
  int rc = build(in, merge, b, err);
  if (rc == 0 && b->library && !b->runnable)
    rc = pt_err_set(err, PT_EFORBID, "export --context: %s, and pagetune's allocator library runs no Lua: "
                                    "no image to build (the other formats say what the nearest settings are)", b->refused);
  if (rc == 0 && b->runnable) {
    const char *srcs[N_IMAGE_FILES] = {ctx->lib, ctx->alloc_py, ctx->site_py, NULL};
    for (size_t i = 0; i + 1 < N_IMAGE_FILES && rc == 0; i++)
      if (!srcs[i]) rc = pt_err_set(err, PT_ENOTFOUND, "export --context: no %s to copy (%s)", image_files[i].name, image_files[i].what);
    char sub[4096];
    if (rc == 0 && snprintf(sub, sizeof sub, "%s/" PT_EXPORT_CONTEXT_SUBDIR, ctx->dir) >= (int)sizeof sub)
      rc = pt_err_set(err, PT_ELIMIT, "%s: path too long", ctx->dir);
    if (rc == 0) rc = make_dir(ctx->dir, err);
    if (rc == 0) rc = make_dir(sub, err);
    for (size_t i = 0; i < N_IMAGE_FILES && rc == 0; i++) {
      char dst[4096 + 64];
      snprintf(dst, sizeof dst, "%s/%s", sub, image_files[i].name);
      rc = put_file(dst, srcs[i], in, b, i == 0 ? 0755 : 0644, err);
    }
  }
  if (rc == 0) {
    write_dockerfile(f, in, b, 1);
    if (!b->library)
      fputs("# --context: nothing written: PyTorch's own allocator runs this policy, so the image needs no files from pagetune.\n", f);
    if (ferror(f)) rc = pt_err_set(err, PT_EIO, "export: write failed");
  }
  free(b);
  return rc;
}
