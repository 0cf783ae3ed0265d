/* values.c — option values: counts, byte sizes, grids, objectives (see values.h). */
#include "values.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pt_cli_parse_ulong(const char *s, unsigned long max, unsigned long *out) {
  char *end;
  if (!*s || *s == '-') return -1;
  errno = 0;
  unsigned long v = strtoul(s, &end, 0);
  if (errno || *end || v > max) return -1;
  *out = v;
  return 0;
}

int pt_cli_parse_bytes(const char *s, uint64_t *out) {
  char *end;
  if (!*s || *s == '-') return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return -1;
  int shift = 0;
  switch (*end) {
  case 0: break;
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  case 't': case 'T': shift = 40; end++; break;
  default: return -1;
  }
  if (*end == 'i') end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end || (shift && v > (UINT64_MAX >> shift))) return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

int pt_cli_opt_capacity(const char *arg, void *field) {
  uint64_t v;
  if (pt_cli_parse_bytes(arg, &v) < 0 || !v) return -1;
  *(uint64_t *)field = v;
  return 0;
}

int pt_grid_add(pt_grid *g, const char *arg) {
  if (g->n == PT_GRID_AXES) return -1;
  pt_grid_axis *ax = &g->axis[g->n];
  const char *eq = strchr(arg, '=');
  if (!eq || eq == arg || (size_t)(eq - arg) >= sizeof ax->name) return -1;
  snprintf(ax->name, sizeof ax->name, "%.*s", (int)(eq - arg), arg);
  for (int i = 0; i < g->n; i++)
    if (!strcmp(g->axis[i].name, ax->name)) return -1; /* a second grid of one parameter: which would hold? */
  ax->n = 0;
  for (const char *p = eq + 1; *p;) {
    size_t len = 0;
    int depth = 0;
    for (; p[len] && (depth || p[len] != ','); len++) /* a comma inside [...] belongs to a list value */
      if ((depth += (p[len] == '[') - (p[len] == ']')) < 0 || depth > 1) return -1;
    if (depth || !len || len >= sizeof ax->values[0] || ax->n == PT_GRID_VALUES) return -1;
    snprintf(ax->values[ax->n++], sizeof ax->values[0], "%.*s", (int)len, p);
    p += len;
    if (*p && !*++p) return -1; /* a trailing comma: an empty last value */
  }
  if (!ax->n) return -1;
  g->n++;
  return 0;
}

int pt_cli_opt_grid(const char *arg, void *field) { return pt_grid_add(field, arg); }

int pt_objective_parse(const char *s, pt_objective *o) {
  *o = (pt_objective){.text = s};
  if (!strcmp(s, "time")) return 0;
  if (!strcmp(s, "memory")) {
    o->kind = PT_OBJ_MEMORY;
    return 0;
  }
  if (!strncmp(s, "weighted:", 9)) {
    char *end;
    o->kind = PT_OBJ_WEIGHTED;
    o->w = strtod(s + 9, &end);
    if (end != s + 9 && !*end && o->w >= 0 && o->w <= 1) return 0;
  }
  return -1;
}

int pt_cli_opt_objective(const char *arg, void *field) {
  pt_objective o;
  if (pt_objective_parse(arg, &o) < 0) return -1;
  *(pt_objective *)field = o;
  return 0;
}

int pt_cli_opt_positive(const char *arg, void *field) {
  char *end;
  double v = strtod(arg, &end);
  if (end == arg || *end || !isfinite(v) || v <= 0) return -1;
  *(double *)field = v;
  return 0;
}

double pt_objective_value(const pt_objective *o, const pt_sim_result *r) {
  if (r->ooms || (o->kind != PT_OBJ_MEMORY && !r->has_gpu)) return HUGE_VAL; /* pow(NaN, 0) is 1: say it here */
  double t = r->has_gpu ? r->predicted_alloc_us : NAN, m = (double)r->peak_reserved_bytes;
  double v = o->kind == PT_OBJ_TIME     ? t
             : o->kind == PT_OBJ_MEMORY ? m
                                        : pow(t, o->w) * pow(m, 1 - o->w);
  return isfinite(v) ? v : HUGE_VAL;
}

const char *pt_objective_formula(const pt_objective *o, char *buf, size_t n) {
  if (o->kind == PT_OBJ_TIME) snprintf(buf, n, "predicted_alloc_us");
  else if (o->kind == PT_OBJ_MEMORY) snprintf(buf, n, "peak_reserved_bytes");
  else snprintf(buf, n, "time_us^%g * peak_reserved_bytes^%g", o->w, 1 - o->w);
  return buf;
}
