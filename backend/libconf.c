/* libconf.c — the allocator library's configuration, read and checked (see libconf.h). */
#include "libconf.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "jsonread.h"

#define ENV_NAME "PAGETUNE_ALLOC_CONF"
#define MAX_ITEMS (PT_MAX_PARAMS + 8) /* the parameters, and mechanism, policy, capacity, hooks, ... */
#define VALUE_MAX 64                  /* a value's text, at most */
#define LIST_MAX 256                  /* a list value's text, at most */

/* Where a conf string came from, for messages: a file's JSON string, or the environment. */
typedef struct where {
  const char *name;   /* the file, or PAGETUNE_ALLOC_CONF */
  const pt_jr_val *v; /* the JSON string that holds the conf; NULL for the environment */
  const char *key;    /* that string's key, for messages */
} where;

/* "NAME: line L, column C: KEY column N: REASON", or "NAME: column N: REASON" for the environment. */
__attribute__((format(printf, 5, 6))) static int conf_fail(const where *w, size_t off, pt_err *err, int code, const char *fmt, ...) {
  char reason[PT_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof reason, fmt, ap);
  va_end(ap);
  if (!w->v) return pt_err_set(err, code, "%s: column %zu: %s", w->name, off + 1, reason);
  int line, col;
  pt_jr_pos(w->v, &line, &col);
  return pt_err_set(err, code, "%s: line %d, column %d: %s column %zu: %s", w->name, line, col, w->key, off + 1, reason);
}

/* ---- a conf string: "name=value,..." (ours) or "key:value,..." (PyTorch's) ------------------ */

typedef struct item {
  const char *name, *val;
  size_t nlen, vlen;
  size_t off, voff; /* where name and value start in the string */
} item;

typedef struct items {
  int n;
  item v[MAX_ITEMS];
} items;

static int is_blank(char c) { return c == ' ' || c == '\t'; }

static int same(const char *s, size_t n, const char *word) { return strlen(word) == n && !memcmp(s, word, n); }

/* The first ',' of s[pos..len) outside brackets (a list value's commas are its own), or NULL. */
static const char *next_comma(const char *s, size_t pos, size_t len) {
  for (int depth = 0; pos < len; pos++) {
    if (s[pos] == '[') depth++;
    else if (s[pos] == ']' && depth) depth--;
    else if (s[pos] == ',' && !depth) return s + pos;
  }
  return NULL;
}

/* s[0..len) split at ',' (outside brackets) into trimmed name SEP value items; names [A-Za-z0-9_.], each once. */
static int split(const char *s, size_t len, char sep, const where *w, items *it, pt_err *err) {
  it->n = 0;
  if (memchr(s, 0, len)) return conf_fail(w, (size_t)((const char *)memchr(s, 0, len) - s), err, PT_EFORMAT, "a NUL character");
  for (size_t pos = 0;;) {
    const char *comma = next_comma(s, pos, len);
    size_t e = comma ? (size_t)(comma - s) : len, b = pos, z = e;
    while (b < z && is_blank(s[b])) b++;
    while (z > b && is_blank(s[z - 1])) z--;
    if (b == z) return conf_fail(w, b, err, PT_EFORMAT, len == 0 ? "empty: no mechanism%cNAME" : "an empty item", sep);
    const char *eq = memchr(s + b, sep, z - b);
    if (!eq) return conf_fail(w, b, err, PT_EFORMAT, "'%.*s' is not NAME%cVALUE", (int)(z - b < 40 ? z - b : 40), s + b, sep);
    if (it->n == MAX_ITEMS) return conf_fail(w, b, err, PT_ELIMIT, "more than %d items", MAX_ITEMS);
    item *i = &it->v[it->n];
    size_t ne = (size_t)(eq - s), vb = ne + 1;
    while (ne > b && is_blank(s[ne - 1])) ne--;
    while (vb < z && is_blank(s[vb])) vb++;
    *i = (item){s + b, s + vb, ne - b, z - vb, b, vb};
    if (!i->nlen) return conf_fail(w, b, err, PT_EFORMAT, "no name before '%c'", sep);
    for (size_t k = 0; k < i->nlen; k++) {
      char c = i->name[k];
      if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.'))
        return conf_fail(w, b + k, err, PT_EFORMAT, "a name may hold only letters, digits, _ and . (not byte 0x%02x)", (unsigned char)c);
    }
    if (i->nlen >= PT_PARAM_NAME_MAX) return conf_fail(w, b, err, PT_ELIMIT, "a name longer than %d bytes", PT_PARAM_NAME_MAX - 1);
    if (!i->vlen) return conf_fail(w, vb, err, PT_EFORMAT, "no value for %.*s", (int)i->nlen, i->name);
    for (int k = 0; k < it->n; k++)
      if (it->v[k].nlen == i->nlen && !memcmp(it->v[k].name, i->name, i->nlen))
        return conf_fail(w, b, err, PT_EFORMAT, "duplicate key %.*s (first at column %zu)", (int)i->nlen, i->name, it->v[k].off + 1);
    it->n++;
    if (!comma) return 0;
    pos = e + 1;
  }
}

/* A value as a number: decimal (strtod, the whole text), or [+-]inf / infinity in any case. */
static int item_number(const item *i, const where *w, double *out, pt_err *err) {
  char t[VALUE_MAX + 1];
  if (i->vlen > VALUE_MAX) return conf_fail(w, i->voff, err, PT_EFORMAT, "%.*s: the value is not a number", (int)i->nlen, i->name);
  memcpy(t, i->val, i->vlen);
  t[i->vlen] = 0;
  const char *m = t + (t[0] == '+' || t[0] == '-');
  if (!strcasecmp(m, "inf") || !strcasecmp(m, "infinity")) {
    *out = t[0] == '-' ? -INFINITY : INFINITY;
    return 0;
  }
  int ok = strspn(t, "0123456789.eE+-") == i->vlen;
  char *end = NULL;
  errno = 0;
  double d = ok ? strtod(t, &end) : 0;
  if (!ok || end != t + i->vlen)
    return conf_fail(w, i->voff, err, PT_EFORMAT, "%.*s: '%s' is not a number", (int)i->nlen, i->name, t);
  if (isinf(d)) return conf_fail(w, i->voff, err, PT_EFORMAT, "%.*s: '%s' is out of range (write inf for no limit)", (int)i->nlen, i->name, t);
  *out = d; /* an underflow is the nearest double */
  return 0;
}

/* Decimal digits as a uint64 (a whole number of bytes); -1 when they are not one. */
static int parse_u64(const char *s, size_t n, uint64_t *out) {
  if (n == 0 || n > 20 || strspn(s, "0123456789") < n) return -1;
  char t[21];
  memcpy(t, s, n);
  t[n] = 0;
  errno = 0;
  unsigned long long v = strtoull(t, NULL, 10);
  if (errno == ERANGE) return -1;
  *out = v;
  return 0;
}

static int is_param_of(const pt_mech_ops *m, const char *s, size_t n) {
  if (same(s, n, "device_total_bytes")) return 1; /* the device's size: every mechanism is told it (export writes it for any) */
  for (const pt_mech_param *mp = m->params; mp && mp->name; mp++)
    if (same(s, n, mp->name)) return 1;
  return 0;
}

/* The mechanism's parameter names, for a message: "a, b, c" (at most n bytes). */
static const char *param_names(const pt_mech_ops *m, char *buf, size_t n) {
  size_t len = 0;
  buf[0] = 0;
  for (const pt_mech_param *mp = m->params; mp && mp->name; mp++) {
    int w = snprintf(buf + len, n - len, "%s%s", len ? ", " : "", mp->name);
    if (w < 0 || (size_t)w >= n - len) break;
    len += (size_t)w;
  }
  return len ? buf : "none";
}

static int set_policy(const char *s, size_t n, pt_libconf *out) {
  if (n == 0 || n >= sizeof out->policy) return -1;
  for (size_t k = 0; k < n; k++)
    if ((unsigned char)s[k] < 0x20 || s[k] == 0x7f) return -1;
  memcpy(out->policy, s, n);
  out->policy[n] = 0;
  return 0;
}

/* A parameter item: a number the mechanism declares, into out->params. */
static int set_param(const item *i, const where *w, pt_libconf *out, pt_err *err) {
  if (!is_param_of(out->mech, i->name, i->nlen)) {
    char names[256];
    return conf_fail(w, i->off, err, PT_EFORMAT, "%s has no parameter %.*s (it has: %s)", out->mech->name, (int)i->nlen, i->name,
                     param_names(out->mech, names, sizeof names));
  }
  char name[PT_PARAM_NAME_MAX];
  snprintf(name, sizeof name, "%.*s", (int)i->nlen, i->name);
  if (i->vlen && i->val[0] == '[') { /* a list value (mech.h), PyTorch's form; the mechanism checks where it may be one */
    char t[LIST_MAX + 1], why[200];
    double num;
    pt_plist l;
    if (i->vlen > LIST_MAX) return conf_fail(w, i->voff, err, PT_EFORMAT, "%s: the list is longer than %d bytes", name, LIST_MAX);
    memcpy(t, i->val, i->vlen);
    t[i->vlen] = 0;
    if (pt_param_value_parse(t, &num, &l, why, sizeof why) < 0) return conf_fail(w, i->voff, err, PT_EFORMAT, "%s: %s", name, why);
    int rc = l.n ? pt_params_set_list(&out->params, name, &l) : pt_params_set(&out->params, name, num);
    return rc < 0 ? conf_fail(w, i->off, err, PT_ELIMIT, "more than %d parameters", PT_MAX_PARAMS) : 0;
  }
  double d = 0;
  int rc = item_number(i, w, &d, err);
  if (rc < 0) return rc;
  if (!strcmp(name, "device_total_bytes")) {
    uint64_t t = d >= 0 && d < 18446744073709551616.0 ? (uint64_t)d : 0; /* in range first: the cast is defined */
    if (!(d >= 0 && d < 18446744073709551616.0) || (double)t != d)
      return conf_fail(w, i->voff, err, PT_EFORMAT, "device_total_bytes must be a whole number of bytes");
    if (out->device_total_bytes && out->device_total_bytes != t)
      return conf_fail(w, i->voff, err, PT_EFORMAT, "device_total_bytes=%.*s differs from the file's device_total_bytes %llu", (int)i->vlen,
                       i->val, (unsigned long long)out->device_total_bytes);
    out->device_total_bytes = t;
  }
  if (pt_params_set(&out->params, name, d) < 0) return conf_fail(w, i->off, err, PT_ELIMIT, "more than %d parameters", PT_MAX_PARAMS);
  return 0;
}

/*
 * Our conf string into out.  mech_given: the file's own "mechanism" (the conf's must agree), or NULL (the
 * environment: the conf names it); cap_given: likewise for capacity (NULL: none given).
 */
static int apply_conf(const char *s, size_t len, const where *w, const pt_mech_ops *mech_given, const uint64_t *cap_given,
                      long *tables_at, pt_libconf *out, pt_err *err) {
  items *it = malloc(sizeof *it);
  if (!it) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", w->name);
  int rc = split(s, len, '=', w, it, err);
  const item *mi = NULL, *hi = NULL;
  for (int k = 0; rc == 0 && k < it->n; k++)
    if (same(it->v[k].name, it->v[k].nlen, "mechanism")) mi = &it->v[k];
  for (int k = 0; rc == 0 && k < it->n; k++) /* first, before any parameter the hooks would have read */
    if (same(it->v[k].name, it->v[k].nlen, "hooks")) {
      const item *i = &it->v[k];
      hi = i;
      if (same(i->val, i->vlen, "tables") && !tables_at)
        rc = conf_fail(w, i->off, err, PT_EFORMAT, "hooks=tables: the policy%s%s's hooks travel as tables, which only the export's JSON "
                       "holds: set PAGETUNE_CONFIG to the file `pagetune export --format json` writes", out->policy[0] ? " " : "", out->policy);
      else if (!same(i->val, i->vlen, "tables"))
        rc = conf_fail(w, i->off, err, PT_EFORMAT, "hooks=%.*s: the policy%s%s has hooks (Lua), which the library cannot run: it runs mechanisms only",
                       (int)(i->vlen < 40 ? i->vlen : 40), i->val, out->policy[0] ? " " : "", out->policy);
    }
  if (tables_at) *tables_at = -1;
  if (rc == 0 && !mi) rc = conf_fail(w, 0, err, PT_EFORMAT, "no mechanism= (one of: %s)", pt_mech_names());
  if (rc == 0) {
    char name[VALUE_MAX + 1];
    snprintf(name, sizeof name, "%.*s", (int)(mi->vlen < VALUE_MAX ? mi->vlen : VALUE_MAX), mi->val);
    out->mech = mi->vlen <= VALUE_MAX ? pt_mech_find(name) : NULL;
    if (!out->mech) rc = conf_fail(w, mi->voff, err, PT_EFORMAT, "unknown mechanism '%.40s' (one of: %s)", name, pt_mech_names());
    else if (mech_given && out->mech != mech_given)
      rc = conf_fail(w, mi->voff, err, PT_EFORMAT, "mechanism=%s differs from the file's \"mechanism\": \"%s\"", out->mech->name, mech_given->name);
  }
  for (int k = 0; rc == 0 && k < it->n; k++) {
    const item *i = &it->v[k];
    if (i == mi) continue;
    if (i == hi) {
      *tables_at = (long)hi->off; /* hooks=tables: the caller reads "hook_tables" */
    } else if (same(i->name, i->nlen, "policy")) {
      pt_libconf spare;
      if (set_policy(i->val, i->vlen, mech_given ? &spare : out) < 0) /* the file's own "policy" is the one kept */
        rc = conf_fail(w, i->voff, err, PT_EFORMAT, "policy: a name of 1 to %d bytes without control characters", PT_LIBCONF_NAME_MAX - 1);
    } else if (same(i->name, i->nlen, "capacity")) {
      uint64_t cap;
      if (parse_u64(i->val, i->vlen, &cap) < 0)
        rc = conf_fail(w, i->voff, err, PT_EFORMAT, "capacity: '%.*s' is not a whole number of bytes", (int)(i->vlen < 40 ? i->vlen : 40), i->val);
      else if (cap_given && cap != *cap_given)
        rc = conf_fail(w, i->voff, err, PT_EFORMAT, "capacity=%llu differs from the file's \"capacity\": %llu", (unsigned long long)cap,
                       (unsigned long long)*cap_given);
      else out->capacity = cap;
    } else {
      rc = set_param(i, w, out, err);
    }
  }
  free(it);
  return rc;
}

/* PyTorch's conf ("key:value,...") of an export that needs no library, for out->mech (already set). */
static int apply_pytorch_conf(const char *s, size_t len, const where *w, pt_libconf *out, pt_err *err) {
  if (len == 0) return 0; /* PyTorch's defaults: the mechanism's */
  items *it = malloc(sizeof *it);
  if (!it) return pt_err_set(err, PT_ENOMEM, "%s: out of memory", w->name);
  int rc = split(s, len, ':', w, it, err);
  const char *m = out->mech->name;
  for (int k = 0; rc == 0 && k < it->n; k++) {
    const item *i = &it->v[k];
    if (same(i->name, i->nlen, "backend")) {
      int async = same(i->val, i->vlen, "cudaMallocAsync");
      if (!async && !same(i->val, i->vlen, "native"))
        rc = conf_fail(w, i->voff, err, PT_EFORMAT, "backend: '%.*s' is neither native nor cudaMallocAsync", (int)(i->vlen < 40 ? i->vlen : 40), i->val);
      else if (async != !strcmp(m, "async_pool"))
        rc = conf_fail(w, i->voff, err, PT_EFORMAT, "backend:%.*s disagrees with the file's mechanism %s", (int)i->vlen, i->val, m);
    } else if (same(i->name, i->nlen, "expandable_segments")) {
      int on = same(i->val, i->vlen, "True");
      if (!on && !same(i->val, i->vlen, "False"))
        rc = conf_fail(w, i->voff, err, PT_EFORMAT, "expandable_segments: '%.*s' is neither True nor False", (int)(i->vlen < 40 ? i->vlen : 40), i->val);
      else if (on != !strcmp(m, "expandable"))
        rc = conf_fail(w, i->voff, err, PT_EFORMAT, "expandable_segments:%.*s disagrees with the file's mechanism %s", (int)i->vlen, i->val, m);
    } else if (i->val[0] == '[') {
      rc = conf_fail(w, i->voff, err, PT_EFORMAT, "%.*s: per-size lists are not supported by the library", (int)i->nlen, i->name);
    } else {
      rc = set_param(i, w, out, err);
    }
  }
  free(it);
  return rc;
}

/* The mechanism's own check of the parameters, as one line naming where they came from. */
static int check_params(const where *w, pt_libconf *out, pt_err *err) {
  int rc = pt_mech_check_params(out->mech, &out->params, err);
  if (rc == 0) return 0;
  if (!w->v) return pt_err_prefix(err, PT_EFORMAT, "%s", w->name);
  int line, col;
  pt_jr_pos(w->v, &line, &col);
  return pt_err_prefix(err, PT_EFORMAT, "%s: line %d, column %d: %s", w->name, line, col, w->key);
}

int pt_libconf_from_conf_string(const char *conf, pt_libconf *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  if (!conf) return pt_err_set(err, PT_EUSAGE, ENV_NAME ": not set");
  where w = {ENV_NAME, NULL, NULL};
  int rc = apply_conf(conf, strlen(conf), &w, NULL, NULL, NULL, out, err);
  if (rc == 0) rc = check_params(&w, out, err);
  if (rc < 0) memset(out, 0, sizeof *out);
  return rc;
}

/* ---- the export JSON -------------------------------------------------------------------- */

/* A JSON number that is a whole number of bytes, exactly (its text, not the double). */
static int json_u64(const pt_jr_val *obj, const char *key, const char *name, uint64_t *out, pt_err *err) {
  const pt_jr_val *v = pt_jr_get(obj, key);
  int rc = pt_jr_expect(v, PT_JR_NUMBER, key, err);
  if (rc == 0) {
    const char *t = pt_jr_number_text(v);
    if (parse_u64(t, strlen(t), out) < 0)
      rc = pt_jr_err_at(v, err, PT_EFORMAT, "%s must be a whole number of bytes from 0 to 18446744073709551615, not %.40s", key, t);
  }
  return rc < 0 ? pt_err_prefix(err, rc, "%s", name) : 0;
}

static int json_string(const pt_jr_val *obj, const char *key, const char *name, const char **s, size_t *len, pt_err *err) {
  const pt_jr_val *v = pt_jr_get(obj, key);
  int rc = pt_jr_expect(v, PT_JR_STRING, key, err);
  if (rc < 0) return pt_err_prefix(err, rc, "%s", name);
  *s = pt_jr_string(v, len);
  return 0;
}

/* A whole number of bytes at v (its text, exactly), or an error at v naming what. */
static int piece_u64(const pt_jr_val *v, const char *what, uint64_t *out, pt_err *err) {
  int rc = pt_jr_expect(v, PT_JR_NUMBER, what, err);
  if (rc < 0) return rc;
  const char *t = pt_jr_number_text(v);
  if (parse_u64(t, strlen(t), out) < 0) return pt_jr_err_at(v, err, PT_EFORMAT, "%s must be a whole number of bytes, not %.40s", what, t);
  return 0;
}

/* One table: a list of [LO, HI, FORM] (identity) or [LO, HI, FORM, ARG] pieces, checked whole (sizetable.h). */
static int read_table(const pt_jr_val *arr, const char *key, pt_sizetab *t, pt_err *err) {
  char what[64];
  snprintf(what, sizeof what, "hook_tables.%s", key);
  int rc = pt_jr_expect(arr, PT_JR_ARRAY, what, err);
  if (rc < 0) return rc;
  size_t n = pt_jr_len(arr);
  memset(t, 0, sizeof *t);
  if (n == 0) return pt_jr_err_at(arr, err, PT_EFORMAT, "%s: a table needs 1 to %d pieces, not none", what, PT_SIZETAB_MAX_PIECES);
  for (size_t i = 0; i < n; i++) {
    const pt_jr_val *pv = pt_jr_index(arr, i);
    if (i == PT_SIZETAB_MAX_PIECES)
      return pt_jr_err_at(pv, err, PT_ELIMIT, "hook_tables.%s: more than %d pieces", key, PT_SIZETAB_MAX_PIECES);
    snprintf(what, sizeof what, "hook_tables.%s piece %zu", key, i);
    if ((rc = pt_jr_expect(pv, PT_JR_ARRAY, what, err)) < 0) return rc;
    size_t m = pt_jr_len(pv);
    pt_sizetab_piece *p = &t->p[i];
    const pt_jr_val *fv = pt_jr_index(pv, 2);
    if (m < 3 || m > 4)
      return pt_jr_err_at(pv, err, PT_EFORMAT, "%s: a piece is [LO, HI, \"const\", C], [LO, HI, \"identity\"] or [LO, HI, \"round_up\", M]", what);
    if ((rc = piece_u64(pt_jr_index(pv, 0), what, &p->lo, err)) < 0 || (rc = piece_u64(pt_jr_index(pv, 1), what, &p->hi, err)) < 0 ||
        (rc = pt_jr_expect(fv, PT_JR_STRING, what, err)) < 0)
      return rc;
    size_t flen;
    const char *fs = pt_jr_string(fv, &flen);
    p->form = pt_sizetab_form_find(fs, flen);
    if (p->form < 0)
      return pt_jr_err_at(fv, err, PT_EFORMAT, "%s: unknown form \"%.40s\" (const, identity, round_up)", what, fs);
    if ((p->form == PT_SIZETAB_IDENTITY) != (m == 3))
      return pt_jr_err_at(pv, err, PT_EFORMAT, "%s: %s takes %s", what, fs, m == 3 ? "an argument" : "no argument");
    if (m == 4 && (rc = piece_u64(pt_jr_index(pv, 3), what, &p->arg, err)) < 0) return rc;
    t->n = (int)i + 1;
  }
  int bad;
  pt_err why;
  if (pt_sizetab_check(t, &bad, &why) < 0) {
    const pt_jr_val *at = bad >= 0 && (size_t)bad < n ? pt_jr_index(arr, (size_t)bad) : arr;
    memset(t, 0, sizeof *t);
    return pt_jr_err_at(at, err, PT_EFORMAT, "hook_tables.%s: %s", key, why.msg);
  }
  return 0;
}

/* "hook_tables": {"round": [...], "segment_size": [...]}, as hooks=tables (at the conf's offset at; -1: none) says the file holds. */
static int read_tables(const pt_jr_val *root, const where *w, long at, pt_libconf *out, pt_err *err) {
  const pt_jr_val *tv = pt_jr_get(root, "hook_tables");
  if (!tv && at < 0) return 0;
  if (!tv) return conf_fail(w, (size_t)at, err, PT_EFORMAT, "hooks=tables, but the file has no \"hook_tables\"");
  int rc;
  if (at < 0) rc = pt_jr_err_at(tv, err, PT_EFORMAT, "hook_tables without hooks=tables in pagetune_library.conf");
  else rc = pt_jr_expect(tv, PT_JR_OBJECT, "hook_tables", err);
  for (size_t i = 0; rc == 0 && i < pt_jr_len(tv); i++) {
    const pt_jr_val *m = pt_jr_index(tv, i);
    size_t klen;
    const char *k = pt_jr_key(m, &klen);
    if (same(k, klen, "round")) rc = read_table(m, "round", &out->tables.round, err);
    else if (same(k, klen, "segment_size")) rc = read_table(m, "segment_size", &out->tables.segment_size, err);
    else rc = pt_jr_err_at(m, err, PT_EFORMAT, "hook_tables: no hook \"%.40s\" travels as a table (round, segment_size)", k);
  }
  if (rc == 0 && !out->tables.round.n && !out->tables.segment_size.n)
    rc = pt_jr_err_at(tv, err, PT_EFORMAT, "hook_tables holds no table");
  return rc < 0 ? pt_err_prefix(err, rc, "%s", w->name) : 0;
}

static int from_doc(const pt_jr_val *root, const char *name, pt_libconf *out, pt_err *err) {
  int rc = pt_jr_expect(root, PT_JR_OBJECT, "the file", err);
  if (rc < 0) return pt_err_prefix(err, rc, "%s", name);
  const char *s;
  size_t n;
  if ((rc = json_string(root, "mechanism", name, &s, &n, err)) < 0) return rc;
  const pt_jr_val *mv = pt_jr_get(root, "mechanism");
  out->mech = strlen(s) == n ? pt_mech_find(s) : NULL;
  if (!out->mech) {
    pt_jr_err_at(mv, err, PT_EFORMAT, "unknown mechanism \"%.40s\" (one of: %s)", s, pt_mech_names());
    return pt_err_prefix(err, PT_EFORMAT, "%s", name);
  }
  if ((rc = json_string(root, "policy", name, &s, &n, err)) < 0) return rc;
  if (set_policy(s, n, out) < 0) {
    pt_jr_err_at(pt_jr_get(root, "policy"), err, PT_EFORMAT, "policy must be a name of 1 to %d bytes without control characters",
                 PT_LIBCONF_NAME_MAX - 1);
    return pt_err_prefix(err, PT_EFORMAT, "%s", name);
  }
  if ((rc = json_u64(root, "capacity", name, &out->capacity, err)) < 0) return rc;
  if ((rc = json_u64(root, "device_total_bytes", name, &out->device_total_bytes, err)) < 0) return rc;
  const pt_jr_val *lib = pt_jr_get(root, "pagetune_library");
  if (!lib) return pt_err_set(err, PT_EFORMAT, "%s: pagetune_library is missing", name);
  where w = {name, NULL, NULL};
  if (pt_jr_type(lib) == PT_JR_NULL) { /* PyTorch's own allocator can run it: its conf says the rest */
    if ((rc = json_string(root, "pytorch_alloc_conf", name, &s, &n, err)) < 0) return rc;
    w.v = pt_jr_get(root, "pytorch_alloc_conf");
    w.key = "pytorch_alloc_conf";
    rc = apply_pytorch_conf(s, n, &w, out, err);
  } else {
    if ((rc = pt_jr_expect(lib, PT_JR_OBJECT, "pagetune_library", err)) < 0) return pt_err_prefix(err, rc, "%s", name);
    const pt_jr_val *cv = pt_jr_get(lib, "conf");
    if ((rc = pt_jr_expect(cv, PT_JR_STRING, "pagetune_library.conf", err)) < 0) return pt_err_prefix(err, rc, "%s", name);
    s = pt_jr_string(cv, &n);
    w.v = cv;
    w.key = "pagetune_library.conf";
    uint64_t cap = out->capacity;
    long at = -1;
    rc = apply_conf(s, n, &w, out->mech, &cap, &at, out, err);
    if (rc == 0) rc = read_tables(root, &w, at, out, err);
  }
  if (rc == 0 && w.v && !strcmp(w.key, "pytorch_alloc_conf") && pt_jr_get(root, "hook_tables"))
    rc = pt_err_prefix(err, pt_jr_err_at(pt_jr_get(root, "hook_tables"), err, PT_EFORMAT, "hook_tables in an export PyTorch's own allocator runs"),
                       "%s", name);
  return rc < 0 ? rc : check_params(&w, out, err);
}

int pt_libconf_parse(const char *text, size_t len, const char *name, pt_libconf *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  if (!name) name = "(configuration)";
  pt_jr_doc *doc;
  int rc = pt_jr_parse(text, len, NULL, &doc, err);
  if (rc < 0) return pt_err_prefix(err, rc, "%s", name);
  rc = from_doc(pt_jr_root(doc), name, out, err);
  pt_jr_free(doc);
  if (rc < 0) memset(out, 0, sizeof *out);
  return rc;
}

int pt_libconf_load(const char *path, pt_libconf *out, pt_err *err) {
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f) return pt_err_set(err, PT_EIO, "%s: cannot open: %s", path, strerror(errno));
  char *buf = malloc(PT_JR_MAX_BYTES + 1);
  if (!buf) {
    fclose(f);
    return pt_err_set(err, PT_ENOMEM, "%s: out of memory", path);
  }
  size_t n = fread(buf, 1, PT_JR_MAX_BYTES + 1, f);
  int bad = ferror(f);
  fclose(f);
  int rc;
  if (bad) rc = pt_err_set(err, PT_EIO, "%s: read failed", path);
  else if (n > PT_JR_MAX_BYTES) rc = pt_err_set(err, PT_ELIMIT, "%s: larger than %u bytes: not an export", path, PT_JR_MAX_BYTES);
  else rc = pt_libconf_parse(buf, n, path, out, err);
  free(buf);
  return rc;
}

/* printf-style at buf[*at..n); *at past n once anything did not fit. */
__attribute__((format(printf, 4, 5))) static void append(char *buf, size_t n, size_t *at, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = *at < n ? vsnprintf(buf + *at, n - *at, fmt, ap) : 0;
  va_end(ap);
  *at = w < 0 ? n : *at + (size_t)w;
}

int pt_libconf_to_conf_string(const pt_libconf *c, char *buf, size_t n) {
  size_t at = 0;
  append(buf, n, &at, "mechanism=%s", c->mech->name);
  if (c->policy[0]) append(buf, n, &at, ",policy=%s", c->policy);
  if (c->capacity) append(buf, n, &at, ",capacity=%llu", (unsigned long long)c->capacity);
  for (int i = 0; i < c->params.n; i++) {
    char v[256];
    append(buf, n, &at, ",%s=%s", c->params.v[i].name, pt_params_value_text(&c->params, i, v, sizeof v));
  }
  if (c->tables.round.n || c->tables.segment_size.n) append(buf, n, &at, ",hooks=tables");
  return at >= n ? PT_ELIMIT : 0;
}
