/* mech.c — the mechanism registry and parameter sets (see mech.h). */
#include "mech.h"

#include "bset.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const pt_mech_ops *const all[] = {&pt_mech_direct, &pt_mech_caching, &pt_mech_expandable,
                                         &pt_mech_async_pool, &pt_mech_stitch};

const pt_mech_ops *pt_mech_find(const char *name) {
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (!strcmp(all[i]->name, name)) return all[i];
  return NULL;
}

const char *pt_mech_names(void) { return "direct, caching, expandable, async_pool, stitch"; }

double pt_params_get(const pt_params *p, const char *name, double dflt) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].name, name)) return p->v[i].value;
  return dflt;
}

/* The slot of name, added when absent; -1 when full. */
static int slot(pt_params *p, const char *name) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].name, name)) return i;
  if (p->n == PT_MAX_PARAMS || strlen(name) >= PT_PARAM_NAME_MAX) return -1;
  snprintf(p->v[p->n].name, PT_PARAM_NAME_MAX, "%s", name);
  return p->n++;
}

int pt_params_set(pt_params *p, const char *name, double value) {
  int i = slot(p, name);
  if (i < 0) return PT_ELIMIT;
  p->v[i].value = value;
  p->v[i].list.n = 0;
  return 0;
}

int pt_params_set_list(pt_params *p, const char *name, const pt_plist *list) {
  if (list->n < 1 || list->n > PT_PARAM_LIST_MAX) return PT_ELIMIT;
  int same = 1;
  for (int k = 1; k < list->n; k++) same &= list->v[k] == list->v[0];
  if (same) return pt_params_set(p, name, list->v[0]);
  int i = slot(p, name);
  if (i < 0) return PT_ELIMIT;
  p->v[i].value = NAN;
  p->v[i].list = *list;
  return 0;
}

const pt_plist *pt_params_get_list(const pt_params *p, const char *name) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].name, name)) return p->v[i].list.n ? &p->v[i].list : NULL;
  return NULL;
}

int pt_params_equal(const pt_params *a, const pt_params *b) {
  if (a->n != b->n) return 0;
  for (int i = 0; i < a->n; i++) {
    const pt_plist *x = &a->v[i].list, *y = &b->v[i].list;
    if (strcmp(a->v[i].name, b->v[i].name) || x->n != y->n) return 0;
    if (x->n ? memcmp(x->v, y->v, sizeof x->v[0] * (size_t)x->n) : a->v[i].value != b->v[i].value) return 0;
  }
  return 1;
}

/* ---- a value's text ------------------------------------------------------------ */

/* Digits only (no sign, at most 19): 0, else -1. */
static int whole(const char *s, size_t len, uint64_t *out) {
  uint64_t v = 0;
  if (!len || len > 19) return -1;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return -1;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  *out = v;
  return 0;
}

static int is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

static int log2_floor(uint64_t v) { return 63 - __builtin_clzll(v); }

/* PyTorch 2.11's list form into a table (docs/pytorch-caching-allocator.md, section 2). */
static int list_parse(const char *s, size_t len, pt_plist *out, char *why, size_t n) {
  memset(out, 0, sizeof *out);
  out->n = PT_PARAM_LIST_MAX;
  if (len < 2 || s[len - 1] != ']' || memchr(s + 1, '[', len - 1) || memchr(s, ']', len - 1)) {
    snprintf(why, n, "a list is [BOUNDARY_MIB:DIVISIONS,...,>:DIVISIONS]");
    return PT_EFORMAT;
  }
  int first = 1, last = 0;
  for (size_t at = 1; at < len - 1;) {
    size_t e = at;
    while (e < len - 1 && s[e] != ',') e++;
    const char *colon = memchr(s + at, ':', e - at);
    uint64_t b = 0, v = 0;
    if (!colon || colon == s + at || whole(colon + 1, (size_t)(s + e - colon - 1), &v) < 0) {
      snprintf(why, n, "list entry '%.*s' is not BOUNDARY_MIB:DIVISIONS or >:DIVISIONS", (int)(e - at), s + at);
      return PT_EFORMAT;
    }
    if (v && (!is_pow2(v) || v > (UINT64_C(1) << 52))) {
      snprintf(why, n, "divisions %llu in '%.*s' are not 0 or a power of two", (unsigned long long)v, (int)(e - at), s + at);
      return PT_EFORMAT;
    }
    size_t klen = (size_t)(colon - (s + at));
    if (klen == 1 && s[at] == '>') {
      for (int i = last + 1; i < PT_PARAM_LIST_MAX; i++) out->v[i] = (double)v;
    } else {
      if (whole(s + at, klen, &b) < 0 || !is_pow2(b)) {
        snprintf(why, n, "interval boundary '%.*s' is not a power of two (MiB) or '>'", (int)klen, s + at);
        return PT_EFORMAT;
      }
      int k = log2_floor(b);
      if (k > PT_PARAM_LIST_MAX - 1) k = PT_PARAM_LIST_MAX - 1;
      if (first)
        for (int i = 0; i < k; i++) out->v[i] = (double)v;
      first = 0;
      out->v[k] = (double)v;
      last = k;
    }
    at = e + (e < len - 1);
    if (at == len - 1 && s[e] == ',') {
      snprintf(why, n, "an empty list entry at the end");
      return PT_EFORMAT;
    }
  }
  return 0;
}

int pt_param_value_parse(const char *text, double *num, pt_plist *list, char *why, size_t n) {
  list->n = 0;
  *num = NAN;
  if (text[0] == '[') {
    int rc = list_parse(text, strlen(text), list, why, n), same = 1;
    if (rc < 0) list->n = 0;
    for (int k = 1; rc == 0 && k < list->n; k++) same &= list->v[k] == list->v[0];
    if (rc == 0 && same) *num = list->v[0], list->n = 0; /* every interval alike: that number */
    return rc;
  }
  const char *t = text + (*text == '+' || *text == '-');
  if (!strcasecmp(t, "inf") || !strcasecmp(t, "infinity")) {
    *num = *text == '-' ? -INFINITY : INFINITY;
    return 0;
  }
  int digits = 0, other = 0; /* plain decimal only: no hex, no spaces, no nan */
  for (const char *c = text; *c; c++) {
    if (*c >= '0' && *c <= '9') digits = 1;
    else if (!strchr("+-.eE", *c)) other = 1;
  }
  char *end = NULL;
  errno = 0;
  double v = digits && !other ? strtod(text, &end) : 0;
  if (!digits || other || *end || errno == ERANGE || !isfinite(v)) {
    snprintf(why, n, "'%.64s' is not a number (or a list [BOUNDARY_MIB:DIVISIONS,...,>:DIVISIONS])", text);
    return PT_EFORMAT;
  }
  *num = v + 0.0; /* -0 is 0 */
  return 0;
}

const char *pt_param_list_format(const pt_plist *list, char *buf, size_t n) {
  size_t at = 0;
  int k0 = 0, nl = list->n;
  /* The first entry covers 0..k0: the run of entries equal to entry 0. */
  while (k0 + 1 < nl && list->v[k0 + 1] == list->v[0]) k0++;
  at += (size_t)snprintf(buf + at, at < n ? n - at : 0, "[%llu:%.17g", 1ull << k0, list->v[0]);
  for (int i = k0 + 1; i < nl; i++) {
    int rest = 1;
    for (int j = i + 1; j < nl; j++) rest &= list->v[j] == list->v[i];
    if (rest && nl == PT_PARAM_LIST_MAX) {
      at += (size_t)snprintf(buf + at, at < n ? n - at : 0, ",>:%.17g", list->v[i]);
      break;
    }
    at += (size_t)snprintf(buf + at, at < n ? n - at : 0, ",%llu:%.17g", 1ull << i, list->v[i]);
  }
  snprintf(buf + at, at < n ? n - at : 0, "]");
  return buf;
}

const char *pt_params_value_text(const pt_params *p, int i, char *buf, size_t n) {
  if (p->v[i].list.n) return pt_param_list_format(&p->v[i].list, buf, n);
  double v = p->v[i].value;
  for (int d = 1; d <= 17; d++) {
    snprintf(buf, n, "%.*g", d, v);
    if (strtod(buf, NULL) == v || !isfinite(v)) break;
  }
  return buf;
}

static const char *const kind_names[] = {"a number", "a whole number", "an even whole number",
                                         "0 or a power of two", "0 or 1"};

const char *pt_mech_param_violation(const pt_mech_param *mp, double v, char *buf, size_t n) {
  int ok = v >= mp->min && v <= mp->max; /* false for nan */
  if (ok && mp->kind != PT_PARAM_REAL) {
    ok = isfinite(v) && v == floor(v);
    uint64_t u = ok ? (uint64_t)v : 0;
    if (ok && mp->kind == PT_PARAM_EVEN) ok = u % 2 == 0;
    if (ok && mp->kind == PT_PARAM_POW2) ok = (u & (u - 1)) == 0;
    if (ok && mp->kind == PT_PARAM_FLAG) ok = u <= 1;
  }
  if (ok) return NULL;
  if (mp->kind == PT_PARAM_FLAG) snprintf(buf, n, "%s", kind_names[mp->kind]);
  else snprintf(buf, n, "%s from %.17g to %.17g", kind_names[mp->kind], mp->min, mp->max);
  return buf;
}

const char *pt_mech_param_violation_list(const pt_mech_param *mp, double v, const pt_plist *list, char *buf, size_t n) {
  if (!list || !list->n) return pt_mech_param_violation(mp, v, buf, n);
  if (!mp->list || list->n != PT_PARAM_LIST_MAX) {
    snprintf(buf, n, "a number, not a list");
    return buf;
  }
  char what[128];
  for (int k = 0; k < list->n; k++)
    if (pt_mech_param_violation(mp, list->v[k], what, sizeof what)) {
      snprintf(buf, n, "a list of %s, not one holding %.17g", what, list->v[k]);
      return buf;
    }
  return NULL;
}

double pt_mech_param_get(const pt_mech_param *table, const char *name, const pt_params *p) {
  for (; table->name; table++)
    if (!strcmp(table->name, name)) return pt_params_get(p, name, table->dflt);
  return pt_params_get(p, name, NAN);
}

void pt_mech_param_table(const pt_mech_param *table, const char *name, const pt_params *p, double out[PT_PARAM_LIST_MAX]) {
  const pt_plist *l = pt_params_get_list(p, name);
  double v = l ? 0 : pt_mech_param_get(table, name, p);
  for (int k = 0; k < PT_PARAM_LIST_MAX; k++) out[k] = l ? l->v[k] : v;
}

void pt_mech_alloc_conf_read(const pt_mech_param *table, const pt_params *p, pt_mech_alloc_conf *out) {
  double split_mb = pt_mech_param_get(table, "max_split_size_mb", p);
  double rounding_mb = pt_mech_param_get(table, "max_non_split_rounding_mb", p);
  double rp2[PT_PARAM_LIST_MAX];
  pt_mech_param_table(table, "roundup_power2_divisions", p, rp2);
  out->gc_threshold = pt_mech_param_get(table, "garbage_collection_threshold", p);
  out->max_split = isinf(split_mb) || split_mb >= (double)(PT_MECH_UNLIMITED >> 20) ? PT_MECH_UNLIMITED
                                                                                    : (uint64_t)split_mb << 20;
  out->max_non_split_rounding = isinf(rounding_mb) ? PT_MECH_UNLIMITED : (uint64_t)rounding_mb << 20;
  for (int i = 0; i < PT_PARAM_LIST_MAX; i++) out->rp2[i] = (unsigned)rp2[i]; /* 0 or powers of two (checked) */
}

int pt_mech_check_params(const pt_mech_ops *m, const pt_params *p, pt_err *err) {
  for (const pt_mech_param *mp = m->params; mp && mp->name; mp++) {
    char what[160], text[256];
    double v = pt_params_get(p, mp->name, mp->dflt);
    const pt_plist *l = pt_params_get_list(p, mp->name);
    if (pt_mech_param_violation_list(mp, v, l, what, sizeof what)) {
      if (l) pt_param_list_format(l, text, sizeof text);
      else snprintf(text, sizeof text, "%.17g", v);
      return pt_err_set(err, PT_EUSAGE, "%s: %s must be %s, not %s", m->name, mp->name, what, text);
    }
  }
  return 0;
}

int pt_mech_create(const pt_mech_ops *m, const pt_mech_env *env, void **state) {
  int rc = pt_mech_check_params(m, env->params, env->err);
  return rc < 0 ? rc : m->create(env, state);
}

void pt_mech_set_insert(const pt_mech_env *env, pt_bset *s, pt_bnode *n) {
  if (pt_bset_insert(s, n) < 0 && !*env->fault)
    *env->fault = pt_err_set(env->err, PT_ENOMEM, "out of memory (free-block set)");
}

int pt_mech_check_hook_size(const pt_mech_env *env, const char *who, const char *hook, uint64_t in, uint64_t out) {
  if (out < in || !out)
    return pt_err_set(env->err, PT_EFORMAT, "%s: policy %s(%llu) returned %llu, less than its argument", who, hook,
                      (unsigned long long)in, (unsigned long long)out);
  if (out > PT_MECH_MAX_HOOK_BYTES)
    return pt_err_set(env->err, PT_ELIMIT, "%s: policy %s(%llu) returned %llu, more than 2^50", who, hook,
                      (unsigned long long)in, (unsigned long long)out);
  return 0;
}

int pt_mech_round_slow(const pt_mech_env *env, const char *who, uint64_t bytes, uint64_t *size) {
  const pt_policy_hooks *h = env->hooks;
  if (h && h->round) {
    int rc = h->round(h->ctx, bytes, size, env->err);
    return rc < 0 ? rc : pt_mech_check_hook_size(env, who, "round", bytes, *size);
  }
  if (!(*size = pt_mech_round512(bytes)))
    return pt_err_set(env->err, PT_ELIMIT, "%s: request of %llu bytes", who, (unsigned long long)bytes);
  return 0;
}

int pt_mech_should_collect(const pt_mech_env *env, int *yes) {
  const pt_policy_hooks *h = env->hooks;
  *yes = 0;
  if (!h || !h->should_collect) return 0;
  return h->should_collect(h->ctx, pt_dev_reserved(env->dev), env->allocated ? *env->allocated : 0, yes, env->err);
}
