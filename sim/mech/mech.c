/* mech.c — the mechanism registry and parameter sets (see mech.h). */
#include "mech.h"

#include "bset.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

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

int pt_params_set(pt_params *p, const char *name, double value) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->v[i].name, name)) {
      p->v[i].value = value;
      return 0;
    }
  if (p->n == PT_MAX_PARAMS || strlen(name) >= PT_PARAM_NAME_MAX) return PT_ELIMIT;
  snprintf(p->v[p->n].name, PT_PARAM_NAME_MAX, "%s", name);
  p->v[p->n].value = value;
  p->n++;
  return 0;
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

double pt_mech_param_get(const pt_mech_param *table, const char *name, const pt_params *p) {
  for (; table->name; table++)
    if (!strcmp(table->name, name)) return pt_params_get(p, name, table->dflt);
  return pt_params_get(p, name, NAN);
}

int pt_mech_check_params(const pt_mech_ops *m, const pt_params *p, pt_err *err) {
  for (const pt_mech_param *mp = m->params; mp && mp->name; mp++) {
    char what[128];
    double v = pt_params_get(p, mp->name, mp->dflt);
    if (pt_mech_param_violation(mp, v, what, sizeof what))
      return pt_err_set(err, PT_EUSAGE, "%s: %s must be %s, not %.17g", m->name, mp->name, what, v);
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
  if (out >= in && out) return 0;
  return pt_err_set(env->err, PT_EFORMAT, "%s: policy %s(%llu) returned %llu, less than its argument", who, hook,
                    (unsigned long long)in, (unsigned long long)out);
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
