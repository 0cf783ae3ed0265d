/* mech.c — the mechanism registry and parameter sets (see mech.h). */
#include "mech.h"

#include "bset.h"

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
