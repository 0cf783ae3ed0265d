/* paramjson.c — parameters as JSON and back (see paramjson.h). */
#include "paramjson.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Append printf-style at buf + *len; -1 once the text no longer fits in n. */
static int put(char *buf, size_t n, size_t *len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int w = *len < n ? vsnprintf(buf + *len, n - *len, fmt, ap) : -1;
  va_end(ap);
  if (w < 0 || (size_t)w >= n - *len) return -1;
  *len += (size_t)w;
  return 0;
}

int pt_params_json(const pt_params *p, int sorted, char *buf, size_t n) {
  int order[PT_MAX_PARAMS];
  for (int i = 0; i < p->n; i++) order[i] = i;
  for (int i = 1; sorted && i < p->n; i++)
    for (int j = i; j > 0 && strcmp(p->v[order[j - 1]].name, p->v[order[j]].name) > 0; j--) {
      int tmp = order[j];
      order[j] = order[j - 1];
      order[j - 1] = tmp;
    }
  size_t len = 0;
  int rc = put(buf, n, &len, "{");
  for (int k = 0; rc == 0 && k < p->n; k++) {
    double v = p->v[order[k]].value;
    const pt_plist *l = &p->v[order[k]].list;
    if (l->n) { /* a list: its table, an array of numbers */
      rc = put(buf, n, &len, "%s\"%s\":[", k ? "," : "", p->v[order[k]].name);
      for (int j = 0; rc == 0 && j < l->n; j++) rc = put(buf, n, &len, "%s%.17g", j ? "," : "", l->v[j] + 0.0);
      if (rc == 0) rc = put(buf, n, &len, "]");
    } else if (isfinite(v)) {
      rc = put(buf, n, &len, "%s\"%s\":%.17g", k ? "," : "", p->v[order[k]].name, v + 0.0); /* -0 as 0 */
    } else {
      rc = put(buf, n, &len, "%s\"%s\":null", k ? "," : "", p->v[order[k]].name); /* unlimited */
    }
  }
  if (rc == 0) rc = put(buf, n, &len, "}");
  if (rc < 0 && n) buf[0] = 0;
  return rc < 0 ? PT_ELIMIT : 0;
}

static const char *skip_ws(const char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r') s++;
  return s;
}

/* s at a string's opening quote: its text (escapes kept) and the byte after its closing quote; NULL when unterminated. */
static const char *string_end(const char *s, const char **text, size_t *len) {
  *text = ++s;
  while (*s && *s != '"') s += s[0] == '\\' && s[1] ? 2 : 1;
  if (!*s) return NULL;
  *len = (size_t)(s - *text);
  return s + 1;
}

int pt_params_json_walk(const char *json, int (*fn)(void *ctx, const pt_pj_member *m), void *ctx) {
  const char *s = skip_ws(json ? json : "{}");
  if (*s++ != '{') return PT_EFORMAT;
  for (int first = 1;; first = 0) {
    s = skip_ws(s);
    if (*s == '}') return 0;
    if (!first) {
      if (*s != ',') return PT_EFORMAT;
      s = skip_ws(s + 1);
    }
    pt_pj_member m = {0};
    if (*s != '"' || !(s = string_end(s, &m.key, &m.keylen))) return PT_EFORMAT;
    s = skip_ws(s);
    if (*s != ':') return PT_EFORMAT;
    s = skip_ws(s + 1);
    m.text = s;
    if (*s == '"') {
      m.kind = PT_PJ_STRING;
      if (!(s = string_end(s, &m.text, &m.len))) return PT_EFORMAT;
    } else if (!strncmp(s, "null", 4)) {
      m.kind = PT_PJ_NULL;
      m.num = INFINITY; /* unlimited */
      s += m.len = 4;
    } else if (*s == '[') { /* a list of numbers */
      m.kind = PT_PJ_ARRAY;
      const char *a = skip_ws(s + 1);
      while (*a != ']') {
        char *end;
        if (m.list.n == PT_PARAM_LIST_MAX) return PT_EFORMAT;
        m.list.v[m.list.n++] = strtod(a, &end);
        if (end == a) return PT_EFORMAT;
        a = skip_ws(end);
        if (*a == ',') a = skip_ws(a + 1);
        else if (*a != ']') return PT_EFORMAT;
      }
      m.len = (size_t)(a + 1 - s);
      s = a + 1;
    } else if (!strncmp(s, "true", 4) || !strncmp(s, "false", 5)) {
      m.kind = PT_PJ_BOOL;
      s += m.len = *s == 't' ? 4 : 5;
    } else {
      char *end;
      m.kind = PT_PJ_NUMBER;
      m.num = strtod(s, &end);
      if (end == s) return PT_EFORMAT;
      m.len = (size_t)(end - s);
      s = end;
    }
    int rc = fn(ctx, &m);
    if (rc < 0) return rc;
  }
}

static int put_param(void *ctx, const pt_pj_member *m) {
  char name[PT_PARAM_NAME_MAX];
  if ((m->kind != PT_PJ_NUMBER && m->kind != PT_PJ_NULL && m->kind != PT_PJ_ARRAY) || m->keylen >= sizeof name ||
      memchr(m->key, '\\', m->keylen) || (m->kind == PT_PJ_ARRAY && !m->list.n))
    return PT_EFORMAT;
  snprintf(name, sizeof name, "%.*s", (int)m->keylen, m->key);
  if (m->kind == PT_PJ_ARRAY) return pt_params_set_list(ctx, name, &m->list) < 0 ? PT_EFORMAT : 0;
  return pt_params_set(ctx, name, m->num) < 0 ? PT_EFORMAT : 0;
}

int pt_params_from_json(const char *json, pt_params *out) {
  memset(out, 0, sizeof *out);
  return pt_params_json_walk(json, put_param, out);
}
